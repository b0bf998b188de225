-- PostgreSQL: the same table as migrations/sqlite/0017.

-- The files the last import left out (too large, unreadable, a name that
-- cannot be an id, a broken symlink, ...), each with the reason the import
-- gave: replaced whole by every import, read by `orchestra check`. Paths
-- are relative to the project folder.
CREATE TABLE IF NOT EXISTS skipped (
    path text COLLATE "C" PRIMARY KEY,
    reason text NOT NULL
);
