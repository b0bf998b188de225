-- When each import that changed something committed, by its sequence
-- number (as migrations/sqlite/0005).
CREATE TABLE imports (
    seq bigint PRIMARY KEY,
    -- Milliseconds since the Unix epoch.
    committed_ms bigint NOT NULL
);
