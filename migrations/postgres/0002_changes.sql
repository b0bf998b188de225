-- The change feed (as migrations/sqlite/0002): what each import added,
-- changed and removed, under the import's sequence number, written in the
-- import's own transaction. Its commit raises a NOTIFY carrying only the new
-- sequence; every server reads the rows after the last sequence it saw.
CREATE TABLE changes (
    seq bigint NOT NULL,
    prefix text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    -- 1 new, 2 updated, 3 removed
    kind smallint NOT NULL,
    -- The order of an import's rows (SQLite's rowid).
    ord bigint GENERATED ALWAYS AS IDENTITY
);

CREATE INDEX changes_seq ON changes (seq);
