-- A listing reads every row's title and description. With the
-- `toast_tuple_target` of 0003, PostgreSQL moved them out of line too, until
-- the row was under 128 bytes, and a page of 500 read them from the TOAST
-- table: 3.4 ms for the query alone at 100k documents, against 0.6 ms
-- without them. `MAIN` keeps them in the row (compressed when that helps;
-- out of line only when a row could not fit a page otherwise), while the
-- body, the frontmatter and the search vector still go out of line.
ALTER TABLE documents
    ALTER COLUMN title SET STORAGE MAIN,
    ALTER COLUMN description SET STORAGE MAIN;

-- Rows stored before keep their values where they are until rewritten:
-- rewrite them now (a new value, so that it is stored anew).
UPDATE documents SET title = title || '', description = description || ''
    WHERE true;
