-- A past version's bytes found by rowid, not by hash. Until now every body
-- an import kept also went into the unique index `bodies_hash`, at a
-- random place: at 100k documents with 10 versions each, a 1% re-import
-- dirtied about 800 of its 16 KiB leaves, most of what history added to
-- the import's time.
--
-- Now each version row names the `bodies` row that holds the bytes of the
-- version before it (`previous_body`): the import knows it when it keeps
-- those bytes, which is when it writes the row. A version read takes the
-- next version's row, then the body by rowid. NULL when the version before
-- has no bytes (a removal) or there is none.
ALTER TABLE versions ADD COLUMN previous_body INTEGER;

UPDATE versions SET previous_body = (
    SELECT b.rowid FROM versions p JOIN bodies b ON b.hash = p.hash
    WHERE p.seq = versions.previous AND p.prefix = versions.prefix AND p.id = versions.id)
WHERE previous IS NOT NULL;

-- Finding a body by hash is left to the import, which asks whether bytes
-- it keeps are kept already (a revert, or the same bytes under another
-- key). It asks two tables keyed by the first 8 bytes of the hash (as an
-- integer; a candidate is checked against `bodies.hash`): a small one that
-- takes the import's new entries, so that they land on a few pages rather
-- than each on a random leaf of a large index, and that is moved into the
-- large one in bulk once it holds 32,768 entries (`history::settle`). The
-- Rust step of this migration fills the large one from `bodies`.
CREATE TABLE body_hashes (
    hash8 INTEGER PRIMARY KEY,
    body INTEGER NOT NULL
);

CREATE TABLE recent_body_hashes (
    hash8 INTEGER PRIMARY KEY,
    body INTEGER NOT NULL
);

DROP INDEX bodies_hash;
