-- The `where` fields (as migrations/sqlite/0007): each name/value pair of a
-- document's frontmatter as one term, the hex of 128 bits of the blake3
-- hash of the pair (the same terms as SQLite's, computed by import), in an
-- array under a GIN index: a document matches `KEY=VALUE` filters when its
-- array contains the terms of all of them (`fields @> $1`).
--
-- No PostgreSQL database held documents before this migration existed, so
-- there is nothing to fill.
ALTER TABLE documents ADD COLUMN fields text[] NOT NULL DEFAULT '{}';

CREATE INDEX documents_fields ON documents USING gin (fields);
