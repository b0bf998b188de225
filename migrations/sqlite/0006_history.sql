-- Document history: every version of every document, the current one
-- included, numbered per document from 1. A removal is a version too, with
-- no body (hash NULL). WITHOUT ROWID: small rows, read by key and number.
CREATE TABLE versions (
    prefix TEXT NOT NULL,
    id TEXT NOT NULL,
    version INTEGER NOT NULL,
    -- NULL for a removal.
    hash BLOB,
    size INTEGER NOT NULL,
    title TEXT NOT NULL,
    is_text INTEGER NOT NULL,
    -- The import that made this version (imports.seq: when it committed).
    seq INTEGER NOT NULL,
    PRIMARY KEY (prefix, id, version)
) WITHOUT ROWID;

-- The bytes of versions that are no longer current, once per distinct
-- body (a revert costs nothing), zstd-compressed. The current version's
-- bytes stay in documents.body. A rowid table: bodies are kilobytes.
CREATE TABLE bodies (
    hash BLOB NOT NULL,
    size INTEGER NOT NULL,
    zstd BLOB NOT NULL
);

CREATE UNIQUE INDEX bodies_hash ON bodies (hash);

-- A database made before history: each document starts at version 1.
INSERT INTO versions (prefix, id, version, hash, size, title, is_text, seq)
    SELECT prefix, id, 1, hash, size, title, is_text, seq FROM documents;
