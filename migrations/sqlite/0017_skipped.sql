-- The files the last import left out (too large, unreadable, a name that
-- cannot be an id, a broken symlink, ...), each with the reason the import
-- gave: replaced whole by every import, read by `orchestra check`. Paths
-- are relative to the project folder.
CREATE TABLE skipped (
    path TEXT PRIMARY KEY,
    reason TEXT NOT NULL
) WITHOUT ROWID;
