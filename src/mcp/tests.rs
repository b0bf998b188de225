//! In-process protocol tests: request lines in, response lines out, over an in-memory duplex stream.
