-- A first import spent about a third of PostgreSQL's time in TOAST: with
-- the `toast_tuple_target` of 0003, every value of more than a few dozen
-- bytes went out of line, each one a new OID checked against the TOAST
-- table's index, a TOAST row and an index entry. The frontmatter and the
-- `where` terms are small (about 40 and 90 bytes): `MAIN` keeps them in the
-- row, as titles and descriptions (0009), unless a row could not fit a
-- page otherwise. The search vector still goes out of line, compressed with
-- lz4 instead of pglz, which cost several times more to write (as the
-- bodies' in 0003). Rows stored before stay as they are until rewritten.
ALTER TABLE documents
    ALTER COLUMN frontmatter SET STORAGE MAIN,
    ALTER COLUMN fields SET STORAGE MAIN,
    ALTER COLUMN search SET COMPRESSION lz4;
