-- A version read in two seeks of `versions`, not three. Until now a read
-- of version N took the newest row (under `documents.seq`), jumped to
-- version N+1 (whose row names the `bodies` row of N's bytes), then took
-- N's row for what it records. Each is a random page of a large table, and
-- on a machine that pages out what was not read for a while, each can be a
-- read from the disk.
--
-- Now each row also names the `bodies` rows of the versions its `earlier`
-- names, in the same order (`earlier_bodies`: a JSON array, `null` for a
-- removal), so the newest row leads to N's row and to its bytes at once.
-- The import knows them when it writes the row: the row before it names
-- all but the first, and the first is `previous_body`.
ALTER TABLE versions ADD COLUMN earlier_bodies TEXT NOT NULL DEFAULT '[]';

-- A version's own bytes are named by the row after it (`previous_body`);
-- each row gets those of the (up to) 16 versions before it, newest first,
-- as `earlier` names them.
UPDATE versions SET earlier_bodies = filled.earlier_bodies
FROM (SELECT seq, prefix, id,
             json_group_array(own) OVER (PARTITION BY prefix, id ORDER BY version DESC
                                         ROWS BETWEEN 1 FOLLOWING AND 16 FOLLOWING)
                 AS earlier_bodies
      FROM (SELECT seq, prefix, id, version,
                   lag(previous_body) OVER (PARTITION BY prefix, id ORDER BY version DESC)
                       AS own
            FROM versions)) AS filled
WHERE versions.seq = filled.seq AND versions.prefix = filled.prefix
  AND versions.id = filled.id AND filled.earlier_bodies IS NOT NULL;
