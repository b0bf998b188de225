//! End-to-end tests of `orchestra serve --http` on the real binary: sessions, both eras, SSE notifications, Origin/Host/token checks, body cap, `/resource`, shutdown.
//!
//! The client is a small HTTP/1.1 client over `std::net::TcpStream` (one
//! connection per request, `Connection: close`), so every header — `Host`
//! and `Origin` included — is exactly what the test writes. It reads a
//! `Content-Length` or chunked body whole, or an SSE stream event by event.
//! All traffic goes to 127.0.0.1. The server is started on port 0 and
//! announces its port on stderr.
//!
//! Every error body a test receives is checked (when its server is
//! dropped) for the temp folder's path: error bodies carry no paths.

mod auth;
mod client;
mod grants;
mod guards;
mod messages;
mod oauth;
mod outage;
mod resource;
mod server;
mod sessions;
mod streams;
mod writes;

use std::time::Duration;

pub(crate) use client::Resp;
pub(crate) use messages::{encode, fixture_project};
pub(crate) use server::HttpServer;

/// A plain request on a loaded machine running a debug build.
pub(super) const IO_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a notification may take after an import committed (the server
/// polls every 100 ms; the margin is for a noisy 2-core machine).
pub(super) const NOTIFY_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the server may take to announce its address.
pub(super) const START_TIMEOUT: Duration = Duration::from_secs(30);

pub(super) const MAX_BODY: usize = 4 * 1024 * 1024;
pub(super) const FEAT_001: &str = "orchestra://features/FEAT-001";
pub(super) const CAFE: &str = "orchestra://notes/caf%C3%A9%20notes";
pub(super) const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
