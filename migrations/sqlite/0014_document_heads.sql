-- A past version's bytes from the document's own row. Until now a read of
-- version N took the document's row (for `seq`), then the newest row of
-- `versions` (for `earlier_bodies`), then N's row, then the bytes: three
-- random pages beside the document's, each one a read from the disk on a
-- machine that has paged the database out.
--
-- Now the document's row also holds its newest version's number and that
-- version's `earlier_bodies`, which the import knows when it writes the
-- row. A read of one of the 16 versions before the current one goes from
-- the document's row straight to its bytes; whether they are text is what
-- they are (valid UTF-8), as the import decided it. A removed document, a
-- version further back, or a row where these are NULL takes the chain.
ALTER TABLE documents ADD COLUMN version INTEGER;
ALTER TABLE documents ADD COLUMN earlier_bodies TEXT;

UPDATE documents SET (version, earlier_bodies) = (
    SELECT v.version, v.earlier_bodies FROM versions v
    WHERE v.seq = documents.seq AND v.prefix = documents.prefix AND v.id = documents.id);
