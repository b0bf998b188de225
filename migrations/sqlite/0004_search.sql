-- Full-text search over every document's key, title and body (FTS5).
--
-- `search_source` says what is indexed, once, for the index and for the
-- import that maintains it: the key as `prefix/id`, the title, and the body
-- of UTF-8 documents (a binary document is found by its key and title only).
-- The index is external-content: it stores no copy of the text; snippets
-- read the body back through the view.
--
-- `body_start` is where the Markdown starts, past the frontmatter block (a
-- byte offset, 0 when there is none): YAML keys such as `status:` in every
-- document would make them all hits. The description is indexed on its own.
-- Filled in by import; for the rows of a database made before this
-- migration, by the migration's Rust step, which then builds the index.
ALTER TABLE documents ADD COLUMN body_start INTEGER NOT NULL DEFAULT 0;

CREATE VIEW search_source AS
    SELECT rowid AS rowid,
           prefix || '/' || id AS key,
           title,
           coalesce(description, '') AS description,
           CASE WHEN is_text THEN CAST(substr(body, body_start + 1) AS TEXT) ELSE '' END AS body
    FROM documents;

-- unicode61 with diacritics removed: `cafe resume` matches `Café Résumé`,
-- case never matters, and `FEAT-0012` is the phrase `feat 0012`.
CREATE VIRTUAL TABLE search USING fts5(
    key, title, description, body,
    content = 'search_source',
    content_rowid = 'rowid',
    tokenize = 'unicode61 remove_diacritics 2'
);

-- BM25 with a match in the key or the title worth ten times one in the body,
-- and one in the description five times. A configured rank is about twice as
-- fast as an explicit bm25() call.
INSERT INTO search (search, rank) VALUES ('rank', 'bm25(10.0, 10.0, 5.0, 1.0)');

-- Pending index data held in memory before it is written as a segment
-- (default 1 MB): with 16 MB the index of 100k documents (214 MB) is built in
-- 2.66 s instead of 2.91 s, in fewer segments.
INSERT INTO search (search, rank) VALUES ('hashsize', 16777216);

-- Frontmatter fields for `where KEY=VALUE` filters: one row per scalar
-- top-level field and per scalar item of a top-level list, its value as YAML
-- text (computed by import from the frontmatter). An index lookup instead of
-- parsing every document's frontmatter.
CREATE TABLE fields (
    doc INTEGER NOT NULL,
    name TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (doc, name, value)
) WITHOUT ROWID;

CREATE INDEX fields_lookup ON fields (name, value, doc);
