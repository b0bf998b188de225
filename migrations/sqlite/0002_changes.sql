-- The change feed: what each import added, changed and removed, under the
-- import's sequence number (project.seq), written in the import's own
-- transaction. A running server reads only the rows after the last sequence
-- it saw. Old rows are trimmed by the import that writes new ones.
CREATE TABLE changes (
    seq INTEGER NOT NULL,
    prefix TEXT NOT NULL,
    id TEXT NOT NULL,
    -- 1 new, 2 updated, 3 removed
    kind INTEGER NOT NULL
);

CREATE INDEX changes_seq ON changes (seq);
