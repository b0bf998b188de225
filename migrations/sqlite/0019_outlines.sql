-- The outline of each large document (`parts::outline::OUTLINE_MIN_BYTES`
-- and more, UTF-8 only), found by import beside its links: its headings
-- (level, text, lines, the byte range of each section), its line count,
-- its frontmatter keys and its size, in `parts::outline::Stored`'s binary
-- form. `outline` answers from it, and `read` of a section reads only the
-- section's bytes, instead of loading and parsing the whole document at
-- each call. A smaller document has no row: the tools parse it.
CREATE TABLE outlines (
    prefix TEXT NOT NULL,
    id TEXT NOT NULL,
    outline BLOB NOT NULL,
    PRIMARY KEY (prefix, id)
) WITHOUT ROWID;
