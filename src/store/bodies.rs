//! How the bytes of past versions are kept, on either backend: zstd, each body alone, one context per thread.

use anyhow::Result;

/// The zstd level of stored bodies: zstd's default. On 300 of the bench's
/// documents of about 2 KB (`zstd -b1 -e6`), level 3 stores 38.4% of the
/// input at 146 MB/s, level 6 37.9% at 68 MB/s, level 1 38.6% at 171
/// MB/s. At level 6 compressing took 13% of the writer thread in a 1%
/// re-import with history (100k documents, 10 versions each).
const ZSTD_LEVEL: i32 = 3;

thread_local! {
    // One compression and one decompression context per thread, reused:
    // a context costs more to set up than a 2 KB body to compress.
    static COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
        const { std::cell::RefCell::new(None) };
    static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

pub(in crate::store) fn compress(body: &[u8]) -> Result<Vec<u8>> {
    COMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        let compressor = match slot.as_mut() {
            Some(compressor) => compressor,
            None => slot.insert(zstd::bulk::Compressor::new(ZSTD_LEVEL)?),
        };
        Ok(compressor.compress(body)?)
    })
}

pub(in crate::store) fn decompress(stored: &[u8], size: usize) -> Result<Vec<u8>> {
    DECOMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        let decompressor = match slot.as_mut() {
            Some(decompressor) => decompressor,
            None => slot.insert(zstd::bulk::Decompressor::new()?),
        };
        Ok(decompressor.decompress(stored, size)?)
    })
}
