-- +goose Up
-- A contract version records the language it was written in (gherkin or
-- yaml; every version before this migration is YAML) and the hash of its
-- compiled content, which ignores formatting: publishing unchanged content
-- through PUT /v1/contracts/{name} is refused by comparing it. '' means not
-- computed yet (older rows): the store computes it from the definition.
ALTER TABLE contract_versions ADD COLUMN source_format TEXT NOT NULL DEFAULT 'yaml';
ALTER TABLE contract_versions ADD COLUMN content_hash TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE contract_versions DROP COLUMN content_hash;
ALTER TABLE contract_versions DROP COLUMN source_format;
