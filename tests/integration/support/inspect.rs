//! What a database holds, read beside the binary for the tests to compare: rows, digests, the checks of history and search, a SQLite file's companions, on SQLite or PostgreSQL alike (`Db`).

use super::pg::pg_client;
use super::*;

/// One stored document, as the dump shows it.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Row {
    pub prefix: String,
    pub id: String,
    pub body: Vec<u8>,
    pub title: String,
    pub description: Option<String>,
    pub seq: i64,
    pub is_text: bool,
}

impl Row {
    /// `prefix/id`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.prefix, self.id)
    }
}

impl fmt::Debug for Row {
    /// The body is abbreviated: a 5,000-row diff must stay readable.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = String::from_utf8_lossy(&self.body);
        let head: String = text.chars().take(40).collect();
        f.debug_struct("Row")
            .field("key", &self.key())
            .field(
                "body",
                &format_args!("{} bytes {head:?}..", self.body.len()),
            )
            .field("title", &self.title)
            .field("description", &self.description)
            .field("seq", &self.seq)
            .field("is_text", &self.is_text)
            .finish()
    }
}

/// The `-wal` and `-shm` files beside `db` that exist. A process that
/// closes the database cleanly leaves none (when no other process has it
/// open): the last connection to close checkpoints and removes them.
pub fn companion_files(db: &Path) -> Vec<String> {
    let name = db.file_name().unwrap().to_str().unwrap();
    ["-wal", "-shm"]
        .iter()
        .map(|suffix| format!("{name}{suffix}"))
        .filter(|file| db.with_file_name(file).exists())
        .collect()
}

/// Opens `db` read-only: inspecting a database never changes it.
pub fn open_read_only(db: &Path) -> Connection {
    Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap_or_else(|e| panic!("open {}: {e}", db.display()))
}

/// A connection to a project's database, SQLite file or PostgreSQL, for
/// the queries a test writes once for both: parameters are `$1`, `$2`…
/// (`?1`, `?2`… on SQLite) and the SQL is what both read alike.
pub enum Db {
    Sqlite(Connection),
    Postgres(postgres::Client),
}

/// The advisory lock a PostgreSQL import holds (store/postgres/import_tx.rs).
const IMPORT_LOCK: i64 = 0x6f72_6368_696d_706f;

/// A parameter of a [`Db`] query: a value both drivers can bind.
pub trait Param {
    fn sqlite(&self) -> &dyn rusqlite::ToSql;
    fn postgres(&self) -> &(dyn postgres::types::ToSql + Sync);
}

impl<T: rusqlite::ToSql + postgres::types::ToSql + Sync> Param for T {
    fn sqlite(&self) -> &dyn rusqlite::ToSql {
        self
    }
    fn postgres(&self) -> &(dyn postgres::types::ToSql + Sync) {
        self
    }
}

impl Db {
    /// `db` to read: a SQLite file is opened read-only.
    pub fn open(db: &Path) -> Db {
        match pg_client(db) {
            Some(client) => Db::Postgres(client),
            None => Db::Sqlite(open_read_only(db)),
        }
    }

    /// `db` to write, or to read as the next orchestra would: a WAL left by
    /// a killed writer is recovered first.
    pub fn writable(db: &Path) -> Db {
        match pg_client(db) {
            Some(client) => Db::Postgres(client),
            None => Db::Sqlite(
                Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_WRITE)
                    .unwrap_or_else(|e| panic!("open {}: {e}", db.display())),
            ),
        }
    }

    /// The one row of `sql`, every column an integer (PostgreSQL's
    /// `integer` and `bigint` alike).
    pub fn ints(&mut self, sql: &str, params: &[&dyn Param]) -> Vec<i64> {
        match self {
            Db::Sqlite(conn) => {
                let params: Vec<&dyn rusqlite::ToSql> = params.iter().map(|p| p.sqlite()).collect();
                let mut stmt = conn.prepare(&sql.replace('$', "?")).unwrap();
                let columns = stmt.column_count();
                stmt.query_row(params.as_slice(), |r| {
                    (0..columns).map(|i| r.get(i)).collect()
                })
                .unwrap_or_else(|e| panic!("{sql}: {e}"))
            }
            Db::Postgres(client) => {
                let params: Vec<_> = params.iter().map(|p| p.postgres()).collect();
                let row = client
                    .query_one(sql, &params)
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
                (0..row.len())
                    .map(|i| match *row.columns()[i].type_() {
                        postgres::types::Type::INT4 => i64::from(row.get::<_, i32>(i)),
                        _ => row.get(i),
                    })
                    .collect()
            }
        }
    }

    /// The one integer `sql` selects.
    pub fn int(&mut self, sql: &str, params: &[&dyn Param]) -> i64 {
        let row = self.ints(sql, params);
        assert_eq!(row.len(), 1, "{sql}: one column");
        row[0]
    }

    /// Opens a write transaction that holds what an import holds while it
    /// writes, and in it removes the documents whose id is `id`: on SQLite
    /// the write lock and a rebuild of the search index; on PostgreSQL the
    /// import's advisory lock (store/postgres/import_tx.rs: `IMPORT_LOCK`),
    /// the project row and every document row. `batch("ROLLBACK")` ends it.
    pub fn begin_as_import(&mut self, id: &str) {
        let sql = match self {
            Db::Sqlite(_) => format!(
                "BEGIN IMMEDIATE; DELETE FROM documents WHERE id = '{id}';
                 INSERT INTO search (search) VALUES ('rebuild');"
            ),
            Db::Postgres(_) => format!(
                "BEGIN; SELECT pg_advisory_xact_lock({IMPORT_LOCK});
                 UPDATE project SET seq = seq + 1; DELETE FROM documents WHERE id = '{id}';
                 UPDATE documents SET search = search;"
            ),
        };
        self.batch(&sql);
    }

    /// Runs the statements of `sql`, no rows returned.
    pub fn batch(&mut self, sql: &str) {
        match self {
            Db::Sqlite(conn) => conn.execute_batch(sql).unwrap(),
            Db::Postgres(client) => client.batch_execute(sql).unwrap(),
        }
    }
}

/// Every table of the PostgreSQL database `db` (a `postgres:///NAME`) with
/// every row, as PostgreSQL writes a row as text, sorted: what a command
/// that writes nothing must leave as it was. Empty before any schema.
pub fn pg_tables(db: &Path) -> Vec<(String, Vec<String>)> {
    let mut client = pg_client(db).unwrap_or_else(|| panic!("{} is not PostgreSQL", db.display()));
    let tables: Vec<String> = client
        .query(
            "SELECT table_name::text FROM information_schema.tables
             WHERE table_schema = 'public' ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    tables
        .into_iter()
        .map(|table| {
            let sql = format!("SELECT CAST(t AS text) FROM {table} t ORDER BY 1");
            let rows = client
                .query(&sql, &[])
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect();
            (table, rows)
        })
        .collect()
}

/// The database's size as `stats` counts it: a SQLite file's pages, a
/// PostgreSQL database's `pg_database_size`.
pub fn database_bytes(db: &Path) -> i64 {
    let sql = match pg_client(db) {
        Some(_) => "SELECT pg_database_size(current_database())",
        None => "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size",
    };
    Db::open(db).int(sql, &[])
}

/// Every document of `db`, sorted by (prefix, id).
pub fn dump(db: &Path) -> Vec<Row> {
    if let Some(mut client) = pg_client(db) {
        return client
            .query(
                "SELECT prefix, id, body, title, description, seq, is_text FROM documents
                 ORDER BY prefix, id",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| Row {
                prefix: r.get(0),
                id: r.get(1),
                body: r.get(2),
                title: r.get(3),
                description: r.get(4),
                seq: r.get(5),
                is_text: r.get(6),
            })
            .collect();
    }
    let conn = open_read_only(db);
    let mut stmt = conn
        .prepare(
            "SELECT prefix, id, body, title, description, seq, is_text FROM documents
             ORDER BY prefix, id",
        )
        .unwrap();
    stmt.query_map([], |r| {
        Ok(Row {
            prefix: r.get(0)?,
            id: r.get(1)?,
            body: r.get(2)?,
            title: r.get(3)?,
            description: r.get(4)?,
            seq: r.get(5)?,
            is_text: r.get(6)?,
        })
    })
    .unwrap()
    .collect::<rusqlite::Result<Vec<Row>>>()
    .unwrap()
}

/// The stored keys, sorted.
pub fn keys(db: &Path) -> Vec<String> {
    dump(db).iter().map(Row::key).collect()
}

/// The one row of `key` (`prefix/id`).
pub fn row(db: &Path, key: &str) -> Row {
    dump(db)
        .into_iter()
        .find(|r| r.key() == key)
        .unwrap_or_else(|| panic!("{key} is not in the database"))
}

/// `(root, seq)` of the project the database holds.
pub fn project_row(db: &Path) -> (String, i64) {
    if let Some(mut client) = pg_client(db) {
        let row = client
            .query_one("SELECT root, seq FROM project", &[])
            .unwrap();
        return (row.get(0), row.get(1));
    }
    open_read_only(db)
        .query_row("SELECT root, seq FROM project", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap()
}

/// The stored mtime of `key`, in nanoseconds since the epoch.
pub fn stored_mtime_ns(db: &Path, key: &str) -> i64 {
    let (prefix, id) = key.split_once('/').unwrap();
    if let Some(mut client) = pg_client(db) {
        return client
            .query_one(
                "SELECT mtime_ns FROM documents WHERE prefix = $1 AND id = $2",
                &[&prefix, &id],
            )
            .unwrap()
            .get(0);
    }
    open_read_only(db)
        .query_row(
            "SELECT mtime_ns FROM documents WHERE prefix = ?1 AND id = ?2",
            [prefix, id],
            |r| r.get(0),
        )
        .unwrap()
}

/// `db` with `suffix` appended to its file name (`-wal`, `-shm`).
pub fn sidecar(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.file_name().unwrap().to_os_string();
    name.push(suffix);
    db.with_file_name(name)
}

/// The length of `db`'s `-wal` file; 0 when there is none.
pub fn wal_len(db: &Path) -> u64 {
    std::fs::metadata(sidecar(db, "-wal")).map_or(0, |m| m.len())
}

/// The history against the documents: every document's newest version
/// has its bytes (same hash), version numbers are dense from 1, and every
/// version with bytes finds them, in `documents` (the current ones) or
/// in `bodies`. "ok" when all hold.
pub fn history_check(db: &Path) -> String {
    checked_history(db, false)
}

/// [`history_check`] after a prune, which takes each document's oldest
/// versions: numbers are dense from each document's oldest kept version.
pub fn pruned_history_check(db: &Path) -> String {
    checked_history(db, true)
}

fn checked_history(db: &Path, pruned: bool) -> String {
    let mut conn = Db::writable(db);
    // The number of `v`'s document's oldest version, and what dense
    // numbers are, for the group of a document's versions.
    let (first, dense) = if pruned {
        (
            "(SELECT min(o.version) FROM versions o WHERE o.prefix = v.prefix AND o.id = v.id)",
            "max(version) - min(version) + 1 <> count(*)",
        )
    } else {
        ("1", "min(version) <> 1 OR max(version) <> count(*)")
    };
    let numbers = format!(
        "SELECT count(*) FROM (SELECT prefix, id FROM versions GROUP BY prefix, id
                               HAVING {dense}) AS bad"
    );
    let earlier = format!(
        "SELECT count(*) FROM versions v
         WHERE v.earlier ->> 0 IS NOT v.previous
            OR json_array_length(v.earlier) > 16
            OR json_array_length(v.earlier) < min(v.version - {first}, 16)"
    );
    let previous = format!(
        "SELECT count(*) FROM versions v
         WHERE (v.previous IS NULL) <> (v.version = {first})
            OR (v.previous IS NOT NULL AND NOT EXISTS (
                    SELECT 1 FROM versions p WHERE p.seq = v.previous
                    AND p.prefix = v.prefix AND p.id = v.id AND p.version = v.version - 1))"
    );
    let checks = [
        (
            "documents whose newest version is not their bytes",
            // Windowed, not correlated: SQLite's `versions` has no index
            // by key (migration 0011).
            "SELECT count(*) FROM documents d LEFT JOIN (
                 SELECT prefix, id, hash,
                        row_number() OVER (PARTITION BY prefix, id ORDER BY version DESC) AS n
                 FROM versions) v ON v.prefix = d.prefix AND v.id = d.id AND v.n = 1
             WHERE v.hash IS DISTINCT FROM d.hash",
        ),
        (
            "documents whose version numbers are not dense",
            numbers.as_str(),
        ),
        (
            "versions whose bytes are nowhere",
            "SELECT count(*) FROM versions v WHERE v.hash IS NOT NULL
                 AND NOT EXISTS (SELECT 1 FROM bodies b WHERE b.hash = v.hash)
                 AND NOT EXISTS (SELECT 1 FROM documents d WHERE d.prefix = v.prefix
                                 AND d.id = v.id AND d.hash = v.hash)",
        ),
    ];
    // SQLite keeps each document's versions as a chain from its newest
    // (migration 0011): under `documents.seq`, or a removal in `removed`.
    let chains: &[(&str, &str)] = match conn {
        Db::Sqlite(_) => &[
            (
                "documents whose sequence names no version of theirs",
                "SELECT count(*) FROM documents d WHERE NOT EXISTS (
                     SELECT 1 FROM versions v WHERE v.seq = d.seq AND v.prefix = d.prefix
                     AND v.id = d.id)",
            ),
            (
                "removed keys that are documents, or whose removal is not a version",
                "SELECT count(*) FROM removed r WHERE EXISTS (
                     SELECT 1 FROM documents d WHERE d.prefix = r.prefix AND d.id = r.id)
                     OR NOT EXISTS (SELECT 1 FROM versions v WHERE v.seq = r.seq
                                    AND v.prefix = r.prefix AND v.id = r.id AND v.hash IS NULL)",
            ),
            (
                "keys with versions but neither a document nor a removal",
                "SELECT count(*) FROM (SELECT DISTINCT prefix, id FROM versions) k
                 WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE d.prefix = k.prefix AND d.id = k.id)
                   AND NOT EXISTS (SELECT 1 FROM removed r WHERE r.prefix = k.prefix AND r.id = k.id)",
            ),
            (
                // `->> 0`, not a path: `Db` turns `$` into `?`.
                "versions whose earlier do not begin with their previous, or name more than 16",
                earlier.as_str(),
            ),
            (
                "versions whose previous is not the version before them",
                previous.as_str(),
            ),
            (
                // Migration 0012: a version names the `bodies` row of the
                // bytes of the one before it.
                "versions that do not name the stored bytes of the one before them",
                "SELECT count(*) FROM versions v
                 JOIN versions p ON p.seq = v.previous AND p.prefix = v.prefix AND p.id = v.id
                 WHERE (p.hash IS NULL) <> (v.previous_body IS NULL)
                    OR (p.hash IS NOT NULL AND NOT EXISTS (
                            SELECT 1 FROM bodies b WHERE b.rowid = v.previous_body
                            AND b.hash = p.hash))",
            ),
            (
                // Migration 0013: and of the versions its `earlier` names.
                "versions whose earlier_bodies do not name the stored bytes of those earlier names",
                "SELECT count(*) FROM versions v
                 WHERE json_array_length(v.earlier_bodies) <> json_array_length(v.earlier)
                    OR v.earlier_bodies ->> 0 IS NOT v.previous_body
                    OR EXISTS (
                        SELECT 1 FROM json_each(v.earlier) e
                        JOIN versions p ON p.seq = e.value AND p.prefix = v.prefix AND p.id = v.id
                        WHERE (p.hash IS NULL) <> (v.earlier_bodies ->> e.key IS NULL)
                           OR (p.hash IS NOT NULL AND NOT EXISTS (
                                   SELECT 1 FROM bodies b WHERE b.rowid = v.earlier_bodies ->> e.key
                                   AND b.hash = p.hash)))",
            ),
            (
                // Migration 0014: a document's row holds its newest version.
                "documents whose row does not hold their newest version's number and earlier_bodies",
                "SELECT count(*) FROM documents d
                 JOIN versions v ON v.seq = d.seq AND v.prefix = d.prefix AND v.id = d.id
                 WHERE d.version IS NOT v.version OR d.earlier_bodies IS NOT v.earlier_bodies",
            ),
            (
                "stored bodies that the hash index lacks",
                "SELECT count(*) FROM bodies b
                 WHERE NOT EXISTS (SELECT 1 FROM body_hashes h WHERE h.body = b.rowid)
                   AND NOT EXISTS (SELECT 1 FROM recent_body_hashes h WHERE h.body = b.rowid)",
            ),
        ],
        Db::Postgres(_) => &[],
    };
    for (what, sql) in checks.iter().chain(chains) {
        let n = conn.int(sql, &[]);
        if n != 0 {
            return format!("{n} {what}");
        }
    }
    "ok".to_string()
}

/// `PRAGMA integrity_check` of `db`. Opened read-write, as the next
/// orchestra would: a WAL left by a killed writer is recovered first.
/// The search index and the frontmatter fields against the documents:
/// FTS5's own check of the index against its content (the stored rows), and
/// the fields' index read back term by term (`fts5vocab`) against the pairs
/// recomputed from every stored frontmatter. "ok" when they agree.
pub fn search_check(db: &Path) -> String {
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_WRITE)
        .unwrap_or_else(|e| panic!("open {}: {e}", db.display()));
    for table in ["search", "fields"] {
        if let Err(e) = conn.execute(
            &format!("INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 1)"),
            [],
        ) {
            return format!("{table} index: {e}");
        }
    }
    // Every (document, name, value) pair, the value as YAML text.
    let expected = "SELECT d.rowid, f.key, CASE f.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false'
                        WHEN 'null' THEN 'null' ELSE CAST(f.atom AS TEXT) END
                    FROM documents d, json_each(d.frontmatter) f
                    WHERE d.frontmatter IS NOT NULL AND f.type NOT IN ('object', 'array')
                    UNION
                    SELECT d.rowid, f.key, CASE i.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false'
                        WHEN 'null' THEN 'null' ELSE CAST(i.atom AS TEXT) END
                    FROM documents d, json_each(d.frontmatter) f, json_each(f.value) i
                    WHERE d.frontmatter IS NOT NULL AND f.type = 'array' AND i.type NOT IN ('object', 'array')";
    let expected: std::collections::BTreeSet<(i64, String)> = conn
        .prepare(expected)
        .unwrap()
        .query_map([], |r| {
            let (name, value): (String, String) = (r.get(1)?, r.get(2)?);
            Ok((r.get(0)?, pair_term(&name, &value)))
        })
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    conn.execute_batch(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.fields_terms
             USING fts5vocab(main, fields, 'instance')",
    )
    .unwrap();
    let stored: std::collections::BTreeSet<(i64, String)> = conn
        .prepare("SELECT doc, term FROM temp.fields_terms")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    match expected.symmetric_difference(&stored).count() {
        0 => "ok".to_string(),
        n => format!("{n} frontmatter field rows differ from the documents"),
    }
}

/// The term of a `where` pair in the `fields` index, as migration 0007
/// says: the first 128 bits of the blake3 hash of the name's length (8
/// bytes, little-endian), the name and the value, in hex.
fn pair_term(name: &str, value: &str) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(&(name.len() as u64).to_le_bytes());
    hasher.update(name.as_bytes());
    hasher.update(value.as_bytes());
    hasher.finalize().to_hex()[..32].to_string()
}

pub fn integrity_check(db: &Path) -> String {
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_WRITE)
        .unwrap_or_else(|e| panic!("open {}: {e}", db.display()));
    let rows: Vec<String> = conn
        .prepare("PRAGMA integrity_check")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    rows.join("\n")
}

/// Folds the WAL into the main file and closes, so that the main file alone
/// is the whole database and can be copied.
pub fn checkpoint_and_close(db: &Path) {
    let conn = Connection::open(db).unwrap();
    let busy: i64 = conn
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))
        .unwrap();
    assert_eq!(busy, 0, "checkpoint of {} was blocked", db.display());
    drop(conn);
    assert_eq!(wal_len(db), 0, "{} still has a WAL", db.display());
}

/// A digest of everything an import writes: every column of every document
/// (in key order), the project row, and the change feed (in a fixed order:
/// reader threads record changes in any order). Equal digests, equal
/// databases as far as orchestra can tell; much cheaper than [`dump`].
pub fn content_digest(db: &Path) -> String {
    use rusqlite::types::ValueRef;
    if let Some(mut client) = pg_client(db) {
        return pg_content_digest(&mut client);
    }
    let conn = open_read_only(db);
    let mut hasher = blake3::Hasher::new();
    // Values are framed (type, length) into a buffer hashed in large
    // chunks: many small updates are slow in a debug build.
    let mut buf = Vec::with_capacity(1 << 20);
    for (table, columns, order) in DIGESTED {
        let sql = format!("SELECT {columns} FROM {table} ORDER BY {order}");
        buf.extend_from_slice(table.as_bytes());
        let mut stmt = conn.prepare(&sql).unwrap();
        let columns = stmt.column_count();
        let mut rows = stmt.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            buf.push(b'\n');
            for i in 0..columns {
                let (tag, bytes) = match row.get_ref(i).unwrap() {
                    ValueRef::Null => (b'n', &[][..]),
                    ValueRef::Integer(n) => {
                        buf.push(b'i');
                        buf.extend_from_slice(&n.to_le_bytes());
                        continue;
                    }
                    ValueRef::Real(x) => {
                        buf.push(b'r');
                        buf.extend_from_slice(&x.to_le_bytes());
                        continue;
                    }
                    ValueRef::Text(bytes) => (b't', bytes),
                    ValueRef::Blob(bytes) => (b'b', bytes),
                };
                buf.push(tag);
                buf.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
                buf.extend_from_slice(bytes);
            }
            if buf.len() >= 1 << 20 {
                hasher.update(&buf);
                buf.clear();
            }
        }
    }
    hasher.update(&buf);
    hasher.finalize().to_hex().to_string()
}

/// What [`content_digest`] reads: (table, columns, order).
const DIGESTED: [(&str, &str, &str); 3] = [
    (
        "documents",
        "prefix, id, size, mtime_ns, hash, is_text, title, description, frontmatter, seq, body",
        "prefix, id",
    ),
    ("project", "singleton, root, seq", "singleton"),
    ("changes", "seq, prefix, id, kind", "seq, prefix, id, kind"),
];

/// [`content_digest`] of a PostgreSQL database: the same rows, each as
/// PostgreSQL writes a row as text (`bytea` in hex), framed by its length.
fn pg_content_digest(client: &mut postgres::Client) -> String {
    let mut hasher = blake3::Hasher::new();
    for (table, columns, order) in DIGESTED {
        hasher.update(table.as_bytes());
        let sql = format!("SELECT CAST(ROW({columns}) AS text) FROM {table} ORDER BY {order}");
        for row in client.query(&sql, &[]).unwrap() {
            let text: String = row.get(0);
            hasher.update(&(text.len() as u64).to_le_bytes());
            hasher.update(text.as_bytes());
        }
    }
    hasher.finalize().to_hex().to_string()
}
