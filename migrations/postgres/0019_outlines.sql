-- PostgreSQL: the same table as migrations/sqlite/0019.

-- The outline of each large document (`parts::outline::OUTLINE_MIN_BYTES`
-- and more, UTF-8 only), found by import beside its links: its headings
-- (level, text, lines, the byte range of each section), its line count,
-- its frontmatter keys and its size, in `parts::outline::Stored`'s binary
-- form. `outline` answers from it, and `read` of a section reads only the
-- section's bytes, instead of loading and parsing the whole document at
-- each call. A smaller document has no row: the tools parse it.
CREATE TABLE IF NOT EXISTS outlines (
    prefix text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    outline bytea NOT NULL,
    PRIMARY KEY (prefix, id)
);
