-- PostgreSQL: the same tables as migrations/sqlite/0016.

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
CREATE TABLE IF NOT EXISTS links (
    prefix text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    -- Its place among the document's links, from 0.
    n integer NOT NULL,
    -- The line it is on, from 1, the frontmatter's lines counted.
    line integer NOT NULL,
    target_prefix text COLLATE "C" NOT NULL,
    target_id text COLLATE "C" NOT NULL,
    -- The link's text, and its line's (clipped).
    text text NOT NULL,
    context text NOT NULL,
    PRIMARY KEY (prefix, id, n)
);

CREATE INDEX IF NOT EXISTS links_target ON links (target_prefix, target_id, prefix, id, n);

-- The documents a bare mention can name: those whose last id segment has
-- a mention's shape (`links::name_of`: `docs/tasks/TASK-003` is
-- `TASK-003`).
CREATE TABLE IF NOT EXISTS names (
    name text COLLATE "C" NOT NULL,
    prefix text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    PRIMARY KEY (name, prefix, id)
);
