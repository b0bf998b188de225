-- The links between documents, found by import in each document's Markdown
-- (`links::extract`): one row per link, keyed by the linking document and
-- the link's place in it, so that a document's links are one range (read,
-- replaced, removed with it) and its backlinks another (`links_target`),
-- both in key order.
--
-- A link to a document names it by key (`target_prefix`, `target_id`),
-- whether it exists or not: a broken link becomes whole when that document
-- is imported, and nothing is parsed again. A bare mention of an id
-- (`FEAT-004`) has an empty `target_prefix` and the name in `target_id`:
-- it links to the first document in key order of that name (`names`).
CREATE TABLE links (
    prefix TEXT NOT NULL,
    id TEXT NOT NULL,
    -- Its place among the document's links, from 0.
    n INTEGER NOT NULL,
    -- The line it is on, from 1, the frontmatter's lines counted.
    line INTEGER NOT NULL,
    target_prefix TEXT NOT NULL,
    target_id TEXT NOT NULL,
    -- The link's text, and its line's (clipped).
    text TEXT NOT NULL,
    context TEXT NOT NULL,
    PRIMARY KEY (prefix, id, n)
) WITHOUT ROWID;

CREATE INDEX links_target ON links (target_prefix, target_id, prefix, id, n);

-- The documents a bare mention can name: those whose last id segment has
-- a mention's shape (`links::name_of`: `docs/tasks/TASK-003` is
-- `TASK-003`).
CREATE TABLE names (
    name TEXT NOT NULL,
    prefix TEXT NOT NULL,
    id TEXT NOT NULL,
    PRIMARY KEY (name, prefix, id)
) WITHOUT ROWID;
