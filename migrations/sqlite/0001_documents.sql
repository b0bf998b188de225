-- The project this database holds, and its change counter.
CREATE TABLE project (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    -- Canonical path of the imported folder: a database holds one project.
    root TEXT NOT NULL,
    -- Sequence number of the last import that changed anything.
    seq INTEGER NOT NULL DEFAULT 0
);

-- One row per document. A rowid table with a unique index on (prefix, id):
-- measured here, WITHOUT ROWID with 2 KB rows inserts and reads about 3x slower.
-- `body` is last so that scans of the metadata columns stop before it.
CREATE TABLE documents (
    prefix TEXT NOT NULL,
    id TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    hash BLOB NOT NULL,
    is_text INTEGER NOT NULL,
    title TEXT NOT NULL,
    description TEXT,
    frontmatter TEXT,
    seq INTEGER NOT NULL,
    body BLOB NOT NULL
);

-- Keyset paging on (prefix, id), point reads, and prefix scans of ids.
CREATE UNIQUE INDEX documents_key ON documents (prefix, id);
