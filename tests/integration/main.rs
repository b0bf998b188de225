//! End-to-end tests on the real `orchestra` binary: one test binary, one module per command.

mod browser;
mod check;
mod cli;
mod concurrency;
mod faults;
mod fuzz;
mod history;
mod history_cli;
mod http;
mod import;
mod links;
mod postgres;
mod search;
mod serve;
mod support;
mod tidy;
mod viewer;
mod write;
mod write_faults;
mod write_notify;
