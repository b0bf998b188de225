-- PostgreSQL: the same table as migrations/sqlite/0020.

-- Scoped API keys (`orchestra token create`): the blake3 hash of each key,
-- never the key itself. A key is found by its hash on every request (cached
-- for seconds), so every server of one database agrees on a revocation.
CREATE TABLE IF NOT EXISTS api_keys (
    hash text COLLATE "C" PRIMARY KEY,
    name text COLLATE "C" NOT NULL,
    -- Space-separated, as a token's `scope` claim.
    scopes text NOT NULL,
    -- Unix seconds.
    created_at bigint NOT NULL,
    expires_at bigint,
    revoked_at bigint
);

-- One live key per name: `token revoke NAME` names one key, and the name
-- may be given again once it is revoked.
CREATE UNIQUE INDEX IF NOT EXISTS api_keys_live_name ON api_keys (name) WHERE revoked_at IS NULL;
