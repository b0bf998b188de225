-- Documents moved by a write (`move`): on the old key, its removal's
-- version names where it went; on the new key, its first version names
-- where it came from. Read beside a document's history, which is
-- otherwise a removal on one key and a new document on the other.
CREATE TABLE moves (
    prefix TEXT NOT NULL,
    id TEXT NOT NULL,
    version INTEGER NOT NULL,
    -- 'to' on the old key's removal, 'from' on the new key's first version.
    direction TEXT NOT NULL CHECK (direction IN ('to', 'from')),
    other_prefix TEXT NOT NULL,
    other_id TEXT NOT NULL,
    PRIMARY KEY (prefix, id, version)
) WITHOUT ROWID;
