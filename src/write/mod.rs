//! Writes: documents created, edited, moved and removed by agents and people, written to the Markdown files first (atomically, under the project's lock) and then imported in one transaction, so that the folder stays the source of truth.
pub mod allocate;
pub mod atomic;
pub mod edit;
pub mod lock;
pub mod path;
mod writer;

pub use writer::{MAX_DIFF_BYTES, Refused, Request, Writer, Written};
