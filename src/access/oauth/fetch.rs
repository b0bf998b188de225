//! The HTTP calls to the authorization server (GET a JSON document, POST a form for one) and which URLs may be called at all.
//!
//! ureq is blocking, so every call runs on a blocking thread. Each call has
//! 5 s in all; redirects are not followed (a metadata, JWKS or introspection
//! URL that moved is a configuration to fix, and following one could leave
//! https); any status but 200 is a failure. https verifies certificates
//! against the webpki roots; plain http is for loopback hosts only.

use std::net::IpAddr;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::de::DeserializeOwned;
use ureq::http::Uri;

const TIMEOUT: Duration = Duration::from_secs(5);

/// A JWKS or a metadata document is a few kilobytes.
const BODY_LIMIT: u64 = 1 << 20;

/// RFC 3986 unreserved characters stay as they are; everything else is
/// percent-encoded, as `application/x-www-form-urlencoded` accepts.
const FORM: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Fails unless `url` is an absolute https URL, or http to a loopback host
/// (127.0.0.0/8, ::1, localhost), with no user info and no fragment.
pub(crate) fn check_url(url: &str) -> Result<Uri> {
    let uri: Uri = url
        .parse()
        .with_context(|| format!("{url:?} is not a URL"))?;
    let Some(authority) = uri.authority() else {
        bail!("{url:?} is not an absolute URL");
    };
    if authority.as_str().contains('@') {
        bail!("{url:?} has user info");
    }
    if url.contains('#') {
        bail!("{url:?} has a fragment");
    }
    match uri.scheme_str() {
        Some("https") => {}
        Some("http") if is_loopback(authority.host()) => {}
        Some("http") => bail!(
            "{url:?} is plain http to a host that is not loopback: use https (http is allowed for 127.0.0.1, ::1 and localhost only)"
        ),
        _ => bail!("{url:?} is neither https nor http"),
    }
    Ok(uri)
}

fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The HTTP client, shared by every call of one verifier.
#[derive(Clone)]
pub(crate) struct Fetcher {
    agent: ureq::Agent,
}

impl Default for Fetcher {
    fn default() -> Fetcher {
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(TIMEOUT))
            .max_redirects(0)
            .http_status_as_error(false)
            .user_agent(concat!("orchestra/", env!("CARGO_PKG_VERSION")))
            .build();
        Fetcher {
            agent: config.new_agent(),
        }
    }
}

impl Fetcher {
    /// GETs `url` and parses its body as `T`.
    pub(crate) async fn get_json<T: DeserializeOwned + Send + 'static>(
        &self,
        url: &str,
    ) -> Result<T> {
        check_url(url)?;
        let agent = self.agent.clone();
        let owned = url.to_owned();
        let body = blocking(move || {
            let response = agent
                .get(&owned)
                .header("Accept", "application/json")
                .call();
            read(response)
        })
        .await
        .with_context(|| format!("GET {url}"))?;
        serde_json::from_str(&body).with_context(|| format!("GET {url}: not the JSON expected"))
    }

    /// POSTs `form` to `url` with HTTP Basic client authentication (RFC 6749
    /// §2.3.1: both parts form-encoded first) and parses the answer as `T`.
    /// The form may hold a secret: it goes in the body only, never in an
    /// error.
    pub(crate) async fn post_form<T: DeserializeOwned + Send + 'static>(
        &self,
        url: &str,
        client_id: &str,
        client_secret: &str,
        form: &[(&str, &str)],
    ) -> Result<T> {
        check_url(url)?;
        let credentials = format!(
            "{}:{}",
            utf8_percent_encode(client_id, FORM),
            utf8_percent_encode(client_secret, FORM)
        );
        let authorization = format!("Basic {}", STANDARD.encode(credentials));
        let body = form
            .iter()
            .map(|(k, v)| {
                format!(
                    "{}={}",
                    utf8_percent_encode(k, FORM),
                    utf8_percent_encode(v, FORM)
                )
            })
            .collect::<Vec<_>>()
            .join("&");
        let agent = self.agent.clone();
        let owned = url.to_owned();
        let answer = blocking(move || {
            let response = agent
                .post(&owned)
                .header("Accept", "application/json")
                .header("Content-Type", "application/x-www-form-urlencoded")
                .header("Authorization", &authorization)
                .send(body.as_bytes());
            read(response)
        })
        .await
        .with_context(|| format!("POST {url}"))?;
        serde_json::from_str(&answer).with_context(|| format!("POST {url}: not the JSON expected"))
    }
}

async fn blocking(call: impl FnOnce() -> Result<String> + Send + 'static) -> Result<String> {
    tokio::task::spawn_blocking(call)
        .await
        .context("the HTTP call's thread failed")?
}

/// An answer whose status is not 200, with the OAuth `error` code of its
/// body when it has one (RFC 6749 §5.2). Callers that branch on the status
/// find it with `downcast_ref`.
#[derive(Debug)]
pub(crate) struct Status {
    pub code: u16,
    pub error: Option<String>,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "status {}", self.code)?;
        match &self.error {
            Some(error) => write!(f, " ({error})"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for Status {}

fn read(response: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Result<String> {
    let mut response = response?;
    let status = response.status();
    if status != ureq::http::StatusCode::OK {
        let body = response
            .body_mut()
            .with_config()
            .limit(4096)
            .read_to_string()
            .unwrap_or_default();
        return Err(Status {
            code: status.as_u16(),
            error: error_code(&body),
        }
        .into());
    }
    Ok(response
        .body_mut()
        .with_config()
        .limit(BODY_LIMIT)
        .read_to_string()?)
}

/// The `error` member of an OAuth error body, when it is a plain code: the
/// `error_description` is left out, as it could quote what was sent.
fn error_code(body: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct ErrorBody {
        error: String,
    }
    let code = serde_json::from_str::<ErrorBody>(body).ok()?.error;
    let plain = code.len() <= 64 && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
    plain.then_some(code)
}
