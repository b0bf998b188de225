//! The search's rank function: FTS5's BM25, computed as `bm25()` computes it, with each hit's length in tokens read from a table kept in memory instead of one `_docsize` lookup per hit; seeing areas, with the statistics of their rows alone.
//!
//! Ranking a word found in half of 100k documents scores 50k hits. With
//! FTS5's own `bm25()`, each score costs an SQL statement that reads the
//! hit's row of `search_docsize` (`xColumnSize`): 38% of the search's time in
//! a profile. Here the lengths of every row are read once per state of the
//! database (a scan of `search_docsize`), shared by the store's connections,
//! and each score reads its length from a `Vec`.
//!
//! A query that ranks every one of its hits counts them as it scores them
//! ([`ranking_every_hit`]): the count is the search's total, which would
//! otherwise cost another pass over every hit. A query of one phrase is
//! also ranked without its IDF, for which FTS5 would first count the rows
//! that hold the phrase (a third pass): the IDF scales every score alike,
//! and the count gives the IDF of the page's scores.
//!
//! A reader seeing areas ranks as a store of only their documents would:
//! [`seeing`] gives the rank function the set of the rows it sees
//! ([`Visible`], a bitmap by rowid, with their number and total length,
//! cached per state of the database and set of areas), from which it takes
//! the row count, the average length and, walking each phrase's rows as
//! FTS5 does for its IDF, each phrase's number of rows; and SQL's
//! `orchestra_sees(rowid)` keeps a query's hits in that set, one bit read
//! per hit, without reading its document.
//!
//! The only `unsafe` code of orchestra: FTS5's extension API is C. Each
//! block says why it is sound.

use std::cell::{Cell, RefCell};
use std::ffi::{CStr, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use rusqlite::{Connection, ffi};

use crate::access::Areas;
use crate::store::areas_sql;

/// The function's name, for `rank MATCH 'orchestra_bm25(…)'`.
const NAME: &CStr = c"orchestra_bm25";
/// The SQL function that says whether a query seeing areas sees a rowid.
const SEES: &CStr = c"orchestra_sees";
/// Sets of rows seen kept by a store: one per set of areas searched lately.
const VISIBLE_SETS: usize = 8;

/// BM25's constants, as FTS5 has them.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// The lengths (tokens, all columns) of every indexed row, by rowid, as of
/// one state of the database.
struct Lengths {
    /// What the state is known by: the project's import sequence number and
    /// the index's row count.
    state: (i64, i64),
    /// `tokens[rowid]`; [`MISSING`] where no row has that rowid.
    tokens: Vec<u32>,
}

const MISSING: u32 = u32::MAX;

/// A query reads every row's length when one of its phrases is in at least
/// one row in this many.
const BUILD_SHARE: i64 = 16;

// FTS5 runs the rank function on the thread that steps the statement.
thread_local! {
    /// Whether the statement being stepped on this thread scores every row
    /// that matches it ([`ranking_every_hit`]).
    static EVERY_HIT: Cell<bool> = const { Cell::new(false) };
    /// The query last ranked so on this thread.
    static COUNTED: Cell<Option<Counted>> = const { Cell::new(None) };
    /// Whether the statement being stepped on this thread keeps its
    /// phrases' numbers of rows ([`phrase_rows`]).
    static KEEP_PHRASE_ROWS: Cell<bool> = const { Cell::new(false) };
    /// The phrases' numbers of rows of the query last ranked so.
    static PHRASE_ROWS: RefCell<Option<Vec<i64>>> = const { RefCell::new(None) };
    /// What the statement being stepped on this thread sees ([`seeing`]).
    static SEEING: RefCell<Option<Seeing>> = const { RefCell::new(None) };
}

/// The rows of the index in some areas, as of one state of the database.
pub(super) struct Visible {
    /// The state: the project's import sequence number.
    seq: i64,
    areas: Areas,
    /// One bit per rowid: indexed and in the areas.
    bits: Vec<u64>,
    /// The rows seen, and their tokens (all columns).
    rows: i64,
    tokens: i64,
    /// Every row's length, of the same state.
    lengths: Arc<Lengths>,
}

impl Visible {
    fn contains(&self, rowid: i64) -> bool {
        usize::try_from(rowid).is_ok_and(|r| {
            self.bits
                .get(r / 64)
                .is_some_and(|word| word & (1 << (r % 64)) != 0)
        })
    }
}

/// What a query of a reader seeing areas sees.
#[derive(Clone)]
pub(super) struct Seeing {
    /// The rows whose statistics rank: the store the reader sees (`None`:
    /// the whole index, as FTS5 has them).
    pub stats: Option<Arc<Visible>>,
    /// The rows `orchestra_sees` keeps: those, or the part of them under a
    /// folder the search is limited to.
    pub keep: Arc<Visible>,
}

/// Runs `query`, a statement on this thread, seeing `seeing`: its
/// `orchestra_sees(rowid)` keeps the rows of `seeing.keep`, and this
/// function ranks with the statistics of `seeing.stats`, as FTS5 would in
/// an index of only those rows.
pub(super) fn seeing<T>(seeing: &Seeing, query: impl FnOnce() -> T) -> T {
    /// Ends the mode even when `query` panics.
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            SEEING.set(None);
        }
    }
    SEEING.set(Some(seeing.clone()));
    let reset = Reset;
    let result = query();
    drop(reset);
    result
}

/// A query ranked by [`ranking_every_hit`]: its hits, counted as they were
/// scored, and what its ranks lack.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Counted {
    /// The rows of the index.
    rows: i64,
    /// The rows that matched.
    pub hits: i64,
    /// Whether the ranks lack the IDF: a query of one phrase, whose hits
    /// are the rows that hold it.
    pub without_idf: bool,
}

impl Counted {
    /// The score of a hit ranked `rank`: what FTS5's `bm25()` gives it,
    /// negated (higher is better). Without the IDF, the same product as the
    /// function's, so the same bits: a positive factor keeps the order (it
    /// may make ties, never swap two hits).
    pub fn score(&self, rank: f64) -> f64 {
        match self.without_idf {
            true => -rank * idf(self.rows, self.hits),
            false => -rank,
        }
    }
}

/// Runs `query`, a statement that ranks by this function on this thread
/// and scores every row that matches it (no other condition chooses the
/// rows), and says how many hits it had and how to score them (`None`
/// when it had none). A query of one phrase is ranked without its IDF.
pub(super) fn ranking_every_hit<T>(query: impl FnOnce() -> T) -> (T, Option<Counted>) {
    /// Ends the mode even when `query` panics.
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            EVERY_HIT.set(false);
        }
    }
    COUNTED.set(None);
    EVERY_HIT.set(true);
    let reset = Reset;
    let result = query();
    drop(reset);
    (result, COUNTED.get())
}

/// Runs `query`, a statement that calls this function on this thread, and
/// returns the number of rows that hold each phrase of its expression, as
/// FTS5 counted them for their IDF on the first hit (`None` without a hit):
/// the number of documents of each term of a long query, in one pass over
/// each term's rows, in C.
pub(super) fn phrase_rows<T>(query: impl FnOnce() -> T) -> (T, Option<Vec<i64>>) {
    /// Ends the mode even when `query` panics.
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            KEEP_PHRASE_ROWS.set(false);
        }
    }
    PHRASE_ROWS.set(None);
    KEEP_PHRASE_ROWS.set(true);
    let reset = Reset;
    let result = query();
    drop(reset);
    (result, PHRASE_ROWS.take())
}

/// The query last ranked by [`ranking_every_hit`] on this thread,
/// forgotten: what the tests see of the mode.
#[cfg(test)]
pub(super) fn take_counted() -> Option<Counted> {
    COUNTED.take()
}

/// BM25's IDF of a phrase in `hits` of `rows` rows, as FTS5 computes it.
fn idf(rows: i64, hits: i64) -> f64 {
    let value = (((rows - hits) as f64 + 0.5) / (hits as f64 + 0.5)).ln();
    if value <= 0.0 { 1e-6 } else { value }
}

/// What the searches of one store share across its connections: the
/// lengths of the last state a search ranked in, and the sets of rows seen
/// by the last few sets of areas searched.
#[derive(Default)]
pub(super) struct Cache {
    lengths: Mutex<Option<Arc<Lengths>>>,
    visible: Mutex<Vec<Arc<Visible>>>,
}

/// The rows of the index in `areas`, as `conn` (in a read transaction)
/// sees the database: from the store's `cache`, else read now (the rowids
/// of the areas' documents, an index range each, and every row's length,
/// shared with the rank function).
pub(super) fn visible(conn: &Connection, cache: &Cache, areas: &Areas) -> Result<Arc<Visible>> {
    // SAFETY: `conn` is live and used on this thread.
    let writing =
        unsafe { ffi::sqlite3_txn_state(conn.handle(), c"main".as_ptr()) == ffi::SQLITE_TXN_WRITE };
    let seq: i64 = conn
        .prepare_cached("SELECT seq FROM project")?
        .query_row([], |r| r.get(0))?;
    let fresh = |v: &&Arc<Visible>| v.seq == seq && v.areas == *areas;
    if !writing && let Some(cached) = lock(&cache.visible)?.iter().find(fresh) {
        return Ok(Arc::clone(cached));
    }
    let cached = lock(&cache.lengths)?
        .as_ref()
        .filter(|l| !writing && l.state.0 == seq)
        .cloned();
    let lengths = match cached {
        Some(lengths) => lengths,
        None => {
            // SAFETY: `conn` is live and used on this thread.
            let tokens = unsafe { read_lengths(conn.handle()) }
                .context("cannot read the search index's row lengths")?;
            let rows = tokens.iter().filter(|&&t| t != MISSING).count() as i64;
            let lengths = Arc::new(Lengths {
                state: (seq, rows),
                tokens,
            });
            if !writing {
                *lock(&cache.lengths)? = Some(Arc::clone(&lengths));
            }
            lengths
        }
    };
    let mut args = Vec::new();
    let condition = areas_sql(areas, "prefix", "id", |value| {
        args.push(value);
        "?".to_string()
    });
    let mut stmt =
        conn.prepare_cached(&format!("SELECT rowid FROM documents WHERE {condition}"))?;
    let mut rowids = stmt.query(rusqlite::params_from_iter(args))?;
    let mut bits = vec![0u64; lengths.tokens.len().div_ceil(64)];
    let (mut rows, mut tokens) = (0, 0);
    while let Some(row) = rowids.next()? {
        let rowid = usize::try_from(row.get::<_, i64>(0)?)?;
        let Some(&length) = lengths.tokens.get(rowid).filter(|&&t| t != MISSING) else {
            continue;
        };
        bits[rowid / 64] |= 1 << (rowid % 64);
        rows += 1;
        tokens += i64::from(length);
    }
    let visible = Arc::new(Visible {
        seq,
        areas: areas.clone(),
        bits,
        rows,
        tokens,
        lengths,
    });
    if !writing {
        let mut sets = lock(&cache.visible)?;
        sets.retain(|v| v.seq == seq);
        if sets.len() >= VISIBLE_SETS {
            sets.remove(0);
        }
        sets.push(Arc::clone(&visible));
    }
    Ok(visible)
}

fn lock<T>(mutex: &Mutex<T>) -> Result<std::sync::MutexGuard<'_, T>> {
    mutex
        .lock()
        .map_err(|_| anyhow::anyhow!("the search's cache is poisoned"))
}

/// Registers the rank function and `orchestra_sees` on `conn`, with the
/// store's `cache`.
pub(super) fn register(conn: &Connection, cache: &Arc<Cache>) -> rusqlite::Result<()> {
    // SAFETY: `handle` is the live connection `conn`, used on this thread
    // only. `fts5_api` returns FTS5's own API object, which lives as long as
    // the connection. The user data is an owned `Arc` that FTS5 gives back to
    // `drop_cache` when the connection closes.
    unsafe {
        let db = conn.handle();
        let api = fts5_api(db)?;
        let create = (*api)
            .xCreateFunction
            .ok_or_else(|| failure(ffi::SQLITE_ERROR))?;
        let user_data = Arc::into_raw(Arc::clone(cache)) as *mut c_void;
        let rc = create(api, NAME.as_ptr(), user_data, Some(bm25), Some(drop_cache));
        if rc != ffi::SQLITE_OK {
            drop(Arc::from_raw(user_data as *const Cache));
            return Err(failure(rc));
        }
        let rc = ffi::sqlite3_create_function_v2(
            db,
            SEES.as_ptr(),
            1,
            ffi::SQLITE_UTF8 | ffi::SQLITE_DIRECTONLY,
            ptr::null_mut(),
            Some(sees),
            None,
            None,
            None,
        );
        if rc != ffi::SQLITE_OK {
            return Err(failure(rc));
        }
    }
    Ok(())
}

/// `orchestra_sees(rowid)`: whether the statement being stepped sees the
/// row, by [`seeing`]; false outside it.
unsafe extern "C" fn sees(
    ctx: *mut ffi::sqlite3_context,
    _n_val: c_int,
    vals: *mut *mut ffi::sqlite3_value,
) {
    // SAFETY: SQLite calls this with the one argument it was registered
    // with, valid for the call.
    unsafe {
        let rowid = ffi::sqlite3_value_int64(*vals);
        let seen = SEEING
            .try_with(|s| {
                s.try_borrow()
                    .is_ok_and(|s| s.as_ref().is_some_and(|s| s.keep.contains(rowid)))
            })
            .unwrap_or(false);
        ffi::sqlite3_result_int(ctx, c_int::from(seen));
    }
}

fn failure(rc: c_int) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        ffi::Error::new(rc),
        Some("cannot register the search's rank function".into()),
    )
}

/// FTS5's API object, obtained the documented way: `SELECT fts5(?1)` with a
/// pointer bound to `?1`.
///
/// # Safety
/// `db` must be a live connection used by this thread only.
unsafe fn fts5_api(db: *mut ffi::sqlite3) -> rusqlite::Result<*mut ffi::fts5_api> {
    let mut api: *mut ffi::fts5_api = ptr::null_mut();
    let mut stmt: *mut ffi::sqlite3_stmt = ptr::null_mut();
    // SAFETY: the caller's contract; `api` outlives the statement, which is
    // finalized before this returns.
    unsafe {
        let rc = ffi::sqlite3_prepare_v2(
            db,
            c"SELECT fts5(?1)".as_ptr(),
            -1,
            &mut stmt,
            ptr::null_mut(),
        );
        if rc != ffi::SQLITE_OK {
            return Err(failure(rc));
        }
        ffi::sqlite3_bind_pointer(
            stmt,
            1,
            (&mut api as *mut *mut ffi::fts5_api).cast(),
            c"fts5_api_ptr".as_ptr(),
            None,
        );
        ffi::sqlite3_step(stmt);
        let rc = ffi::sqlite3_finalize(stmt);
        if rc != ffi::SQLITE_OK || api.is_null() {
            return Err(failure(if rc == ffi::SQLITE_OK {
                ffi::SQLITE_ERROR
            } else {
                rc
            }));
        }
    }
    Ok(api)
}

unsafe extern "C" fn drop_cache(user_data: *mut c_void) {
    // SAFETY: `user_data` is the `Arc` that `register` leaked for FTS5, given
    // back once, when the function is destroyed.
    unsafe { drop(Arc::from_raw(user_data as *const Cache)) }
}

/// What a query computes once, on its first hit (FTS5's `Fts5Bm25Data`).
struct Query {
    idf: Vec<f64>,
    avgdl: f64,
    freq: Vec<f64>,
    lengths: Option<Arc<Lengths>>,
    /// For a query ranked by [`ranking_every_hit`], its hits so far.
    counting: Option<Counting>,
}

struct Counting {
    counted: Counted,
    /// The row scored last: a row may be scored more than once in a row.
    last_rowid: Option<i64>,
    /// Whether the lengths were chosen: at the start, from FTS5's count of
    /// each phrase's rows; without it (one phrase), once the hits are
    /// numerous enough.
    lengths_chosen: bool,
}

unsafe extern "C" fn drop_query(query: *mut c_void) {
    // SAFETY: `query` is the `Box` that `bm25` gave FTS5 as auxiliary data,
    // given back once, when the query ends.
    unsafe { drop(Box::from_raw(query as *mut Query)) }
}

/// The rank function: `-score`, as FTS5's `bm25()` (lower is better), with
/// the trailing arguments as column weights.
unsafe extern "C" fn bm25(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    n_val: c_int,
    vals: *mut *mut ffi::sqlite3_value,
) {
    // SAFETY: FTS5 calls this with its API, the current row's context and
    // `n_val` argument values, all valid for the duration of the call.
    let result = catch_unwind(AssertUnwindSafe(|| unsafe {
        let weights = Weights {
            values: vals,
            count: n_val,
        };
        score(&*api, fts, ctx, &weights)
    }));
    // SAFETY: `ctx` is valid for the call.
    unsafe {
        match result {
            Ok(Ok(score)) => ffi::sqlite3_result_double(ctx, -score),
            Ok(Err(rc)) => ffi::sqlite3_result_error_code(ctx, rc),
            Err(_) => ffi::sqlite3_result_error_code(ctx, ffi::SQLITE_INTERNAL),
        }
    }
}

/// The function's trailing arguments: one weight per column, 1 for a
/// column without one.
struct Weights {
    values: *mut *mut ffi::sqlite3_value,
    count: c_int,
}

impl Weights {
    /// # Safety
    /// `values` holds `count` values, valid for the call of [`bm25`].
    unsafe fn of(&self, column: c_int) -> f64 {
        if (0..self.count).contains(&column) {
            // SAFETY: the index is in bounds, by the check above.
            unsafe { ffi::sqlite3_value_double(*self.values.add(column as usize)) }
        } else {
            1.0
        }
    }
}

fn ok(rc: c_int) -> Result<(), c_int> {
    if rc == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(rc)
    }
}

/// The current row's BM25 score, as `fts5Bm25Function` computes it.
///
/// # Safety
/// The arguments of a call of [`bm25`].
unsafe fn score(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    weights: &Weights,
) -> Result<f64, c_int> {
    let missing = ffi::SQLITE_ERROR;
    let get_aux = api.xGetAuxdata.ok_or(missing)?;
    let inst_count = api.xInstCount.ok_or(missing)?;
    let inst = api.xInst.ok_or(missing)?;
    // SAFETY: the caller's contract; the auxiliary data is only ever a
    // `Query` set below, owned by FTS5 until the query ends; the user data
    // is the `Cache` that `register` gave FTS5 for the connection's
    // life.
    unsafe {
        let mut query = get_aux(fts, 0) as *mut Query;
        if query.is_null() {
            let set_aux = api.xSetAuxdata.ok_or(missing)?;
            let fresh = Box::into_raw(Box::new(start(api, fts, ctx)?));
            // On failure FTS5 calls the destructor itself.
            ok(set_aux(fts, fresh.cast(), Some(drop_query)))?;
            query = fresh;
        }
        let query = &mut *query;
        if let Some(counting) = &mut query.counting {
            let rowid = (api.xRowid.ok_or(missing)?)(fts);
            if counting.last_rowid != Some(rowid) {
                counting.last_rowid = Some(rowid);
                counting.counted.hits += 1;
                COUNTED.set(Some(counting.counted));
                // The choice `start` makes from FTS5's count when it has one.
                let (rows, hits) = (counting.counted.rows, counting.counted.hits);
                if !counting.lengths_chosen && hits.saturating_mul(BUILD_SHARE) >= rows {
                    counting.lengths_chosen = true;
                    if query.lengths.is_none() {
                        let cache = (api.xUserData.ok_or(missing)?)(fts) as *const Cache;
                        let db = ffi::sqlite3_context_db_handle(ctx);
                        query.lengths = lengths(&*cache, db, rows, true);
                    }
                }
            }
        }
        query.freq.iter_mut().for_each(|f| *f = 0.0);
        let mut n_inst = 0;
        ok(inst_count(fts, &mut n_inst))?;
        for i in 0..n_inst {
            let (mut phrase, mut column, mut offset) = (0, 0, 0);
            ok(inst(fts, i, &mut phrase, &mut column, &mut offset))?;
            let w = weights.of(column);
            if let Some(f) = usize::try_from(phrase)
                .ok()
                .and_then(|p| query.freq.get_mut(p))
            {
                *f += w;
            }
        }
        let d = f64::from(row_tokens(api, fts, query.lengths.as_deref())?);
        let mut score = 0.0;
        for (idf, freq) in query.idf.iter().zip(&query.freq) {
            score += idf * ((freq * (K1 + 1.0)) / (freq + K1 * (1.0 - B + B * d / query.avgdl)));
        }
        Ok(score)
    }
}

/// The current row's length in tokens: from `lengths` when they have it,
/// else from FTS5 (`xColumnSize`, one lookup).
///
/// # Safety
/// The arguments of a call of [`bm25`].
unsafe fn row_tokens(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    lengths: Option<&Lengths>,
) -> Result<u32, c_int> {
    // SAFETY: the caller's contract.
    unsafe {
        if let (Some(lengths), Some(rowid)) = (lengths, api.xRowid) {
            let known = usize::try_from(rowid(fts))
                .ok()
                .and_then(|r| lengths.tokens.get(r))
                .filter(|&&t| t != MISSING);
            if let Some(&tokens) = known {
                return Ok(tokens);
            }
        }
        let column_size = api.xColumnSize.ok_or(ffi::SQLITE_ERROR)?;
        let mut tokens = 0;
        ok(column_size(fts, -1, &mut tokens))?;
        Ok(u32::try_from(tokens).unwrap_or(0))
    }
}

/// A query's first hit: IDFs, average length, and the lengths of this state.
/// Seeing areas ([`seeing`]), all of them from the rows seen.
///
/// # Safety
/// The arguments of a call of [`bm25`].
unsafe fn start(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
) -> Result<Query, c_int> {
    let missing = ffi::SQLITE_ERROR;
    // SAFETY: the caller's contract.
    unsafe {
        let n_phrase = (api.xPhraseCount.ok_or(missing)?)(fts);
        let seen = SEEING.with_borrow(|s| s.as_ref().and_then(|s| s.stats.clone()));
        let (mut rows, mut tokens) = (0i64, 0i64);
        match &seen {
            Some(seen) => (rows, tokens) = (seen.rows, seen.tokens),
            None => {
                ok((api.xRowCount.ok_or(missing)?)(fts, &mut rows))?;
                ok((api.xColumnTotalSize.ok_or(missing)?)(fts, -1, &mut tokens))?;
            }
        }
        let cache = (api.xUserData.ok_or(missing)?)(fts) as *const Cache;
        let db = ffi::sqlite3_context_db_handle(ctx);
        let avgdl = tokens as f64 / rows as f64;
        let every_hit = EVERY_HIT.get();
        let counting = |without_idf| Counting {
            counted: Counted {
                rows,
                hits: 0,
                without_idf,
            },
            last_rowid: None,
            lengths_chosen: !without_idf || seen.is_some(),
        };
        // The rows seen come with every row's length.
        let lengths = |build| match &seen {
            Some(seen) => Some(Arc::clone(&seen.lengths)),
            None => lengths(&*cache, db, rows, build),
        };
        if n_phrase == 1 && every_hit {
            // Ranked without the IDF; the lengths are read, as below, once
            // the hits are numerous enough (`score` counts them).
            return Ok(Query {
                idf: vec![1.0],
                avgdl,
                freq: vec![0.0],
                lengths: lengths(false),
                counting: Some(counting(true)),
            });
        }
        let query_phrase = api.xQueryPhrase.ok_or(missing)?;
        let mut idf = Vec::new();
        let mut most_hits = 0;
        let keep_rows = KEEP_PHRASE_ROWS.get();
        let mut phrase_rows = Vec::new();
        for i in 0..n_phrase {
            let hits = match &seen {
                None => {
                    let mut hits: i64 = 0;
                    ok(query_phrase(
                        fts,
                        i,
                        (&mut hits as *mut i64).cast(),
                        Some(count_hit),
                    ))?;
                    hits
                }
                Some(seen) => {
                    let mut counting = SeenHits {
                        seen: Arc::as_ptr(seen),
                        hits: 0,
                    };
                    ok(query_phrase(
                        fts,
                        i,
                        (&mut counting as *mut SeenHits).cast(),
                        Some(count_seen_hit),
                    ))?;
                    counting.hits
                }
            };
            most_hits = most_hits.max(hits);
            idf.push(self::idf(rows, hits));
            if keep_rows {
                phrase_rows.push(hits);
            }
        }
        if keep_rows {
            PHRASE_ROWS.set(Some(phrase_rows));
        }
        // Reading every row's length costs about what looking up one in
        // [`BUILD_SHARE`] of them does: not worth it for a few hits, unless
        // an earlier search already did.
        let build = most_hits.saturating_mul(BUILD_SHARE) >= rows;
        Ok(Query {
            freq: vec![0.0; idf.len()],
            idf,
            avgdl,
            lengths: lengths(build),
            counting: every_hit.then(|| counting(false)),
        })
    }
}

unsafe extern "C" fn count_hit(
    _api: *const ffi::Fts5ExtensionApi,
    _fts: *mut ffi::Fts5Context,
    hits: *mut c_void,
) -> c_int {
    // SAFETY: `hits` is the `i64` that `start` passed to `xQueryPhrase`.
    unsafe { *(hits as *mut i64) += 1 };
    ffi::SQLITE_OK
}

/// A phrase's rows among those seen, as `start` counts them.
struct SeenHits {
    seen: *const Visible,
    hits: i64,
}

unsafe extern "C" fn count_seen_hit(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    counting: *mut c_void,
) -> c_int {
    // SAFETY: `counting` is the `SeenHits` that `start` passed to
    // `xQueryPhrase`, whose `seen` it holds alive; `api` and `fts` are the
    // phrase's row, valid for the call.
    unsafe {
        let counting = &mut *(counting as *mut SeenHits);
        let Some(rowid) = (*api).xRowid else {
            return ffi::SQLITE_ERROR;
        };
        if (*counting.seen).contains(rowid(fts)) {
            counting.hits += 1;
        }
    }
    ffi::SQLITE_OK
}

/// The lengths for the database as this connection sees it, from the cache
/// or, when `build` says so, read now. `None` in a write transaction (an
/// import's, whose uncommitted rows no sequence number tells apart) or when
/// they cannot be read: then each hit asks FTS5.
///
/// # Safety
/// `db` is the connection running the query, on this thread.
unsafe fn lengths(
    cache: &Cache,
    db: *mut ffi::sqlite3,
    rows: i64,
    build: bool,
) -> Option<Arc<Lengths>> {
    // SAFETY: the caller's contract.
    unsafe {
        if ffi::sqlite3_txn_state(db, c"main".as_ptr()) == ffi::SQLITE_TXN_WRITE {
            return None;
        }
        let seq = query_i64(db, c"SELECT seq FROM project")?;
        let state = (seq, rows);
        if let Some(cached) = cache
            .lengths
            .lock()
            .ok()?
            .as_ref()
            .filter(|l| l.state == state)
        {
            return Some(Arc::clone(cached));
        }
        if !build {
            return None;
        }
        let fresh = Arc::new(Lengths {
            state,
            tokens: read_lengths(db)?,
        });
        *cache.lengths.lock().ok()? = Some(Arc::clone(&fresh));
        Some(fresh)
    }
}

/// The first column of the first row of `sql`, an integer.
///
/// # Safety
/// `db` is a live connection, used on this thread.
unsafe fn query_i64(db: *mut ffi::sqlite3, sql: &CStr) -> Option<i64> {
    // SAFETY: the caller's contract; the statement is finalized here.
    unsafe {
        let stmt = Statement::prepare(db, sql)?;
        (ffi::sqlite3_step(stmt.0) == ffi::SQLITE_ROW).then(|| ffi::sqlite3_column_int64(stmt.0, 0))
    }
}

/// Every row's length in tokens, the sum of its `search_docsize` record
/// (one varint per column, as `fts5StorageDecodeSizeArray` reads it).
///
/// # Safety
/// `db` is a live connection, used on this thread.
unsafe fn read_lengths(db: *mut ffi::sqlite3) -> Option<Vec<u32>> {
    let mut tokens = Vec::new();
    // SAFETY: the caller's contract; a blob pointer is read before the next
    // step, as long as its length says.
    unsafe {
        let stmt = Statement::prepare(db, c"SELECT id, sz FROM search_docsize ORDER BY id")?;
        loop {
            match ffi::sqlite3_step(stmt.0) {
                ffi::SQLITE_ROW => {}
                ffi::SQLITE_DONE => break,
                _ => return None,
            }
            let id = usize::try_from(ffi::sqlite3_column_int64(stmt.0, 0)).ok()?;
            let blob = ffi::sqlite3_column_blob(stmt.0, 1) as *const u8;
            let len = usize::try_from(ffi::sqlite3_column_bytes(stmt.0, 1)).ok()?;
            let record = if blob.is_null() {
                &[][..]
            } else {
                std::slice::from_raw_parts(blob, len)
            };
            let sum = sum_varints(record)?;
            if id >= tokens.len() {
                tokens.resize(id + 1, MISSING);
            }
            tokens[id] = sum;
        }
    }
    Some(tokens)
}

/// The sum of a record of SQLite varints, `None` if it is malformed.
fn sum_varints(mut record: &[u8]) -> Option<u32> {
    let mut sum: u32 = 0;
    while !record.is_empty() {
        let (value, used) = varint(record)?;
        sum = sum.checked_add(u32::try_from(value).ok()?)?;
        record = &record[used..];
    }
    (sum != MISSING).then_some(sum)
}

/// One SQLite varint: big-endian groups of 7 bits, the high bit set on all
/// but the last byte; a ninth byte carries 8 bits.
fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value: u64 = 0;
    for (i, &byte) in bytes.iter().enumerate().take(9) {
        if i == 8 {
            return Some(((value << 8) | u64::from(byte), 9));
        }
        value = (value << 7) | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// A prepared statement, finalized when dropped.
struct Statement(*mut ffi::sqlite3_stmt);

impl Statement {
    /// # Safety
    /// `db` is a live connection, used on this thread.
    unsafe fn prepare(db: *mut ffi::sqlite3, sql: &CStr) -> Option<Statement> {
        let mut stmt = ptr::null_mut();
        // SAFETY: the caller's contract.
        let rc =
            unsafe { ffi::sqlite3_prepare_v2(db, sql.as_ptr(), -1, &mut stmt, ptr::null_mut()) };
        (rc == ffi::SQLITE_OK && !stmt.is_null()).then_some(Statement(stmt))
    }
}

impl Drop for Statement {
    fn drop(&mut self) {
        // SAFETY: a statement prepared by `prepare`, finalized once.
        unsafe { ffi::sqlite3_finalize(self.0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_read_as_sqlite_writes_them() {
        type Case<'a> = (&'a [u8], Option<(u64, usize)>);
        let cases: &[Case] = &[
            (&[0x00], Some((0, 1))),
            (&[0x7f], Some((127, 1))),
            (&[0x81, 0x00], Some((128, 2))),
            (&[0x82, 0x80, 0x01], Some(((2 << 14) | 1, 3))),
            (&[0x80], None),
            (&[], None),
        ];
        for (bytes, expected) in cases {
            assert_eq!(varint(bytes), *expected, "{bytes:?}");
        }
        assert_eq!(sum_varints(&[0x03, 0x81, 0x00, 0x05]), Some(3 + 128 + 5));
        assert_eq!(sum_varints(&[0x03, 0x81]), None);
    }
}
