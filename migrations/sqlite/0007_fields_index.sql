-- The `where` fields become a full-text index of their own, in which each
-- name/value pair of a document is one term: the hex of 128 bits of the
-- blake3 hash of the pair (see `search::pair_term`), so that a filter is an
-- exact, case-sensitive comparison of the value's YAML text, and a document
-- matches `KEY=VALUE` when it has the term of that pair.
--
-- Why not a table: `fields (doc, name, value)` and its lookup index were two
-- b-trees of 22 MB at 100k documents, and the pairs that an import changes
-- land at random places of both: a 1% re-import wrote nearly every page of
-- them (1,332 of 1,394 of the table alone). FTS5 writes an import's changes
-- as a new segment, merged later in the background of other imports.
--
-- Contentless (the pairs are computed from `documents.frontmatter` by
-- import, and never read back) with `contentless_delete` (a document's row
-- is deleted by rowid alone), and `detail = none`: a filter needs which
-- documents have a term, not where.
DROP TABLE fields;

CREATE VIRTUAL TABLE fields USING fts5(
    pairs,
    content = '',
    contentless_delete = 1,
    detail = none,
    tokenize = 'ascii'
);

-- Pending terms held in memory before they are written as a segment
-- (default 1 MB); a load of 100k documents has about 200k distinct pairs.
INSERT INTO fields (fields, rank) VALUES ('hashsize', 8388608);
