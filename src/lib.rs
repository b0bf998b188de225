//! orchestra: a project's Markdown knowledge, imported into SQLite and served as MCP resources.
//!
//! # Layout
//! - [`doc`]: document keys and prefixes.
//! - [`uri`]: key ↔ `orchestra://` URI.
//! - [`cursor`]: key ↔ opaque listing cursor.
//! - [`frontmatter`]: YAML frontmatter, title and description of a Markdown file.
//! - [`history`]: a document's versions compared (diffs) and described.
//! - [`search`]: the search query language and filters.
//! - [`store`]: the SQLite database; the only module that speaks SQL.
//! - [`table`]: aligned, width-clipped columns for the command line.
//! - [`import`]: files on disk → store, incrementally.
//! - [`parts`]: a document read in parts: lines, windows under a cap, its outline.
//! - [`mcp`]: the MCP server; the only module that knows JSON-RPC and the SDK.
//! - [`reads`]: the server's store reads, off the async threads, a bounded number at once.
//! - [`viewer`]: the web viewer's pages, served beside `/mcp` by `serve --http`.
//! - [`watch`]: `serve --watch`, re-imports when the project folder changes.
//!
//! ARCHITECTURE.md at the repository root has the code map and invariants.

pub mod access;
pub mod cursor;
pub mod doc;
pub mod frontmatter;
pub mod history;
pub mod import;
pub mod links;
pub mod mcp;
pub mod parts;
pub mod reads;
pub mod search;
pub mod store;
pub mod table;
pub mod uri;
pub mod viewer;
pub mod watch;
pub mod write;

/// The version and the commit this binary was built from (`build.rs`):
/// `0.1.0 (56ed811b2c3d)`, `-dirty` after the hash for a modified tree,
/// `(unknown)` outside git. `serverInfo.version` is the plain version.
pub const BUILD: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("ORCHESTRA_COMMIT"),
    ")"
);
