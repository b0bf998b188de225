//! Test helpers: a temp folder per test, a project builder, and the real binary to run in it.
