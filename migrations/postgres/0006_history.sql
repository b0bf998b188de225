-- Document history (as migrations/sqlite/0006): every version of every
-- document, the current one included, numbered per document from 1. A
-- removal is a version too, with no body (hash NULL).
CREATE TABLE versions (
    prefix text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    version integer NOT NULL,
    -- NULL for a removal.
    hash bytea,
    size bigint NOT NULL,
    title text NOT NULL,
    is_text boolean NOT NULL,
    -- The import that made this version (imports.seq: when it committed).
    seq bigint NOT NULL,
    PRIMARY KEY (prefix, id, version)
);

-- The bytes of versions that are no longer current, once per distinct
-- body, zstd-compressed (by orchestra: PostgreSQL's own compression of
-- `bytea` would compress them again; `EXTERNAL` stores them as given).
CREATE TABLE bodies (
    hash bytea PRIMARY KEY,
    size bigint NOT NULL,
    zstd bytea NOT NULL
);

ALTER TABLE bodies ALTER COLUMN zstd SET STORAGE EXTERNAL;

-- A database made before history: each document starts at version 1.
INSERT INTO versions (prefix, id, version, hash, size, title, is_text, seq)
    SELECT prefix, id, 1, hash, size, title, is_text, seq FROM documents;
