-- When each import that changed something committed, by its sequence
-- number: `orchestra stats` shows the last one, `orchestra show --meta` the
-- one that last changed a document (documents.seq). Databases made before
-- this migration have no rows for their earlier imports.
CREATE TABLE imports (
    seq INTEGER PRIMARY KEY,
    -- Milliseconds since the Unix epoch.
    committed_ms INTEGER NOT NULL
);
