-- Versions in the order imports write them. Keyed by (prefix, id,
-- version), every document an import changed wrote a leaf of its own in
-- `versions`, a b-tree several times the size of the documents' key index:
-- at 100k documents with 10 versions each, a 1% re-import dirtied about a
-- thousand more 16 KiB pages, written to the WAL and again at the
-- checkpoint. Keyed by the import's sequence first, an import's versions
-- are appended together, a few pages in all.
--
-- A document's versions are a chain from its newest, each naming the
-- sequence of the one before it (`previous`), and of the 16 before it
-- (`earlier`), so that reading one of those is two key seeks. The newest is
-- the one under `documents.seq` (the import that last changed the
-- document), or, for a removed document, its removal, kept in `removed`.
CREATE TABLE version_chain (
    -- The import that made this version (imports.seq: when it committed).
    seq INTEGER NOT NULL,
    prefix TEXT NOT NULL,
    id TEXT NOT NULL,
    version INTEGER NOT NULL,
    -- The seq of the version before it; NULL for the oldest one kept.
    previous INTEGER,
    -- The seqs of up to 16 versions before it, newest first: a JSON array
    -- (`[]` for the first version).
    earlier TEXT NOT NULL,
    -- NULL for a removal.
    hash BLOB,
    size INTEGER NOT NULL,
    title TEXT NOT NULL,
    is_text INTEGER NOT NULL,
    PRIMARY KEY (seq, prefix, id)
) WITHOUT ROWID;

INSERT INTO version_chain
        (seq, prefix, id, version, previous, earlier, hash, size, title, is_text)
    SELECT seq, prefix, id, version,
           lag(seq) OVER (PARTITION BY prefix, id ORDER BY version),
           (SELECT json_group_array(e.seq ORDER BY e.version DESC) FROM (
                SELECT p.seq, p.version FROM versions p
                WHERE p.prefix = v.prefix AND p.id = v.id AND p.version < v.version
                ORDER BY p.version DESC LIMIT 16) AS e),
           hash, size, title, is_text
    FROM versions v
    ORDER BY seq, prefix, id;

-- The newest version of each removed document: its removal.
CREATE TABLE removed (
    prefix TEXT NOT NULL,
    id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (prefix, id)
) WITHOUT ROWID;

INSERT INTO removed (prefix, id, seq)
    SELECT v.prefix, v.id, max(v.seq) FROM versions v
    WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE d.prefix = v.prefix AND d.id = v.id)
    GROUP BY v.prefix, v.id;

DROP TABLE versions;
ALTER TABLE version_chain RENAME TO versions;
