-- Full-text search (as migrations/sqlite/0004): the key, the title, the
-- description and the Markdown of UTF-8 documents past their frontmatter
-- (`body_start`, a byte offset), in a `tsvector` that import computes and
-- writes with the row, weighted A (key, title), B (description) and D
-- (body), under a GIN index.
--
-- The text search configuration `orchestra`: PostgreSQL's `simple` parser
-- and dictionary (no stemming, no stop words, as SQLite's unicode61) with
-- diacritics removed first (`unaccent`, a trusted extension that a
-- database's owner may create): `cafe resume` matches `Café Résumé`.
CREATE EXTENSION IF NOT EXISTS unaccent;

CREATE TEXT SEARCH CONFIGURATION orchestra (COPY = simple);
ALTER TEXT SEARCH CONFIGURATION orchestra
    ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
    WITH unaccent, simple;

ALTER TABLE documents
    ADD COLUMN body_start integer NOT NULL DEFAULT 0,
    ADD COLUMN search tsvector NOT NULL DEFAULT ''::tsvector;

CREATE INDEX documents_search ON documents USING gin (search);
