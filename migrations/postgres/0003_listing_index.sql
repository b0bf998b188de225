-- The listing and import's comparison read every document's metadata and
-- must not read its body (migrations/sqlite/0003 adds a covering index for
-- that). PostgreSQL moves a row's large values out of line (TOAST) once the
-- row passes `toast_tuple_target`: at its minimum, 128 bytes, every body
-- of more than a few dozen bytes lives in the TOAST table, and a scan of the
-- metadata reads small rows. (A covering index cannot hold the titles and
-- descriptions: an index entry is limited to 2,704 bytes.)
ALTER TABLE documents SET (toast_tuple_target = 128);

-- Bodies out of line are compressed with lz4 rather than PostgreSQL's
-- default pglz, which costs several times more CPU to write.
ALTER TABLE documents ALTER COLUMN body SET COMPRESSION lz4;
