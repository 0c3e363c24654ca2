-- +goose Up
-- threadsByContract(contractName, contractVersion, status) (the SDKs'
-- query): one range in list order; its bounded totalCount reads only the
-- matches instead of every entry of the contract's range. (idPrefix is a
-- range of the primary key on SQLite; PostgreSQL's prefix index changes in
-- the same migration number.)
CREATE INDEX threads_contract_version_status ON threads (contract_name, contract_version, status, created_at, id);

-- +goose Down
DROP INDEX threads_contract_version_status;
