-- PostgreSQL: the same schema as migrations/sqlite/0001, for a team's
-- shared store. Keys are `COLLATE "C"` (byte order, as SQLite's BINARY), so
-- keyset order and cursors are the same on both backends; bodies are
-- `bytea` (`text` refuses NUL bytes).

-- The project this database holds, and its change counter.
CREATE TABLE project (
    singleton integer PRIMARY KEY CHECK (singleton = 1),
    -- Canonical path of the imported folder: a database holds one project.
    root text NOT NULL,
    -- Sequence number of the last import that changed anything. An import
    -- locks this row from its start to its commit: imports serialize, and
    -- sequence order is commit order (no `bigserial`, whose numbers can
    -- commit out of order).
    seq bigint NOT NULL DEFAULT 0
);

CREATE TABLE documents (
    prefix text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    size bigint NOT NULL,
    mtime_ns bigint NOT NULL,
    hash bytea NOT NULL,
    is_text boolean NOT NULL,
    title text NOT NULL,
    description text,
    frontmatter text,
    seq bigint NOT NULL,
    body bytea NOT NULL,
    -- Keyset paging on (prefix, id), point reads, and prefix scans of ids.
    PRIMARY KEY (prefix, id)
);
