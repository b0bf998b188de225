-- PostgreSQL: the same table as migrations/sqlite/0018.

-- Documents moved by a write (`move`): on the old key, its removal's
-- version names where it went; on the new key, its first version names
-- where it came from. Read beside a document's history, which is
-- otherwise a removal on one key and a new document on the other.
CREATE TABLE IF NOT EXISTS moves (
    prefix text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    version integer NOT NULL,
    -- 'to' on the old key's removal, 'from' on the new key's first version.
    direction text NOT NULL CHECK (direction IN ('to', 'from')),
    other_prefix text COLLATE "C" NOT NULL,
    other_id text COLLATE "C" NOT NULL,
    PRIMARY KEY (prefix, id, version)
);
