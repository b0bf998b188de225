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

-- Finding a body by hash is left to the import, which asks whether bytes it
-- keeps are kept already (a revert, or the same bytes under another key).
-- It asks an FTS5 index of the first 16 hex digits of each hash, whose
-- writes are appended as segments and merged in the background of later
-- writes, instead of landing on random b-tree leaves. Candidates are
-- checked against `bodies.hash`.
CREATE VIRTUAL TABLE body_hashes USING fts5(
    hash,
    content = '',
    contentless_delete = 1,
    detail = none
);

INSERT INTO body_hashes (rowid, hash) SELECT rowid, lower(hex(substr(hash, 1, 8))) FROM bodies;

DROP INDEX bodies_hash;
