-- A covering index for the two scans that must not read document bodies:
-- the listing (keyset pages of metadata) and import's comparison of every
-- stored size, mtime and hash with the files. With 2 KB bodies in the rows,
-- either scan otherwise reads the whole table: measured at 100k documents,
-- 274 MB per no-op import, and list pages that cost 3x more at 1M documents
-- than at 1k.
CREATE INDEX documents_meta ON documents (prefix, id, size, mtime_ns, hash, title, description);
