-- +goose Up
-- idPrefix (issue 28): the prefix index carries created_at, so a page picks
-- its 50 newest matches from the index alone (a top-N sort of the entries in
-- the prefix's range) instead of reading a heap row per match; at 1 M
-- threads "ab" matches ~3,900.
CREATE INDEX threads_id_prefix_created ON threads (id text_pattern_ops) INCLUDE (created_at);
DROP INDEX IF EXISTS threads_id_prefix;
-- threadsByContract(contractName, contractVersion, status) (the SDKs'
-- query): one range in list order; its bounded totalCount reads only the
-- matches instead of every entry of the contract's range.
CREATE INDEX threads_contract_version_status ON threads (contract_name, contract_version, status, created_at, id);

-- +goose Down
DROP INDEX threads_contract_version_status;
CREATE INDEX IF NOT EXISTS threads_id_prefix ON threads (id text_pattern_ops);
DROP INDEX threads_id_prefix_created;
