//! What a credential costs a request (issue 36): `resources/read` over HTTP with the static token, an API key and an OAuth JWT (its issuer's keys cached), and searches with a per-prefix grant beside the same searches with every prefix; one server, interleaved rounds.
//!
//! One `orchestra serve --http` takes all three credentials (`--token-file`,
//! `--api-keys`, `--oauth-issuer`), so the three reads differ only in the
//! credential: each round reads the same random document once with each,
//! in an order that rotates, on a keep-alive connection of each. The
//! issuer is this process: an RFC 8414 metadata document and a JWKS of
//! the test key in `fixtures/auth/`, served on loopback; the server fetches
//! its keys at the first JWT (untimed warm-up) and keeps them.
//!
//! The searches: a rare word and the word half the backlog holds, each
//! asked with a key of `orchestra:read orchestra:search` and with one of
//! `orchestra:read:features orchestra:search` (features are 30% of the
//! backlog), alternately.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use crate::Res;
use crate::backlog::{HALF_WORD, RARE_WORDS, doc_path};
use crate::http_client::HttpClient;
use crate::report::{Row, step};
use crate::rng::Rng;
use crate::stats::percentile_ms;
use crate::units::ratio;

const RSA1: &[u8] = include_bytes!("../../fixtures/auth/rsa1.pem");

/// Rounds of three reads, and untimed ones first.
const READ_ROUNDS: usize = 2_000;
/// Rounds of two searches per query.
const SEARCH_ROUNDS: usize = 150;
const WARMUP: usize = 20;

/// Issue 36's targets.
const READ_TARGET: f64 = 1.1;
const SEARCH_TARGET: f64 = 1.2;

#[derive(Default)]
pub struct AuthFigures {
    /// `resources/read` round trips (µs) with each credential.
    pub token_us: Vec<f64>,
    pub key_us: Vec<f64>,
    pub jwt_us: Vec<f64>,
    pub searches: Vec<SearchPair>,
}

/// One query asked with every prefix and with features only, alternately.
pub struct SearchPair {
    pub query: String,
    /// Round trips (µs) seeing every prefix, and features only.
    pub all_us: Vec<f64>,
    pub features_us: Vec<f64>,
    /// The total of hits of each.
    pub hits: (u64, u64),
}

/// The issuer of the bench's JWTs, on loopback.
fn start_issuer() -> Res<String> {
    let key = EncodingKey::from_rsa_pem(RSA1)?;
    let mut jwk = jsonwebtoken::jwk::Jwk::from_encoding_key(&key, Algorithm::RS256)?;
    jwk.common.key_id = Some("bench-1".into());
    let jwks = json!({ "keys": [jwk] });
    let listener = TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let url = format!("http://{}", listener.local_addr()?);
    let metadata = json!({ "issuer": url, "jwks_uri": format!("{url}/jwks") });
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime for the issuer");
        runtime.block_on(async move {
            let app = axum::Router::new()
                .route(
                    "/.well-known/oauth-authorization-server",
                    axum::routing::get(move || async move { axum::Json(metadata) }),
                )
                .route(
                    "/jwks",
                    axum::routing::get(move || async move { axum::Json(jwks) }),
                );
            let listener =
                tokio::net::TcpListener::from_std(listener).expect("the issuer's socket");
            let _ = axum::serve(listener, app).await;
        });
    });
    Ok(url)
}

fn jwt(issuer: &str, audience: &str) -> Res<String> {
    let now = jsonwebtoken::get_current_timestamp();
    let claims = json!({
        "iss": issuer, "sub": "bench", "aud": audience, "client_id": "bench",
        "scope": "orchestra:read orchestra:search", "iat": now, "exp": now + 3600,
    });
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("bench-1".into());
    header.typ = Some("at+jwt".into());
    Ok(jsonwebtoken::encode(
        &header,
        &claims,
        &EncodingKey::from_rsa_pem(RSA1)?,
    )?)
}

/// `orchestra token create`: the key it prints.
fn create_key(bin: &Path, db: &Path, name: &str, scopes: &[&str]) -> Res<String> {
    let mut cmd = Command::new(bin);
    cmd.args(["token", "create", "--name", name, "--db"])
        .arg(db);
    for scope in scopes {
        cmd.args(["--scope", scope]);
    }
    let out = cmd.output()?;
    if !out.status.success() {
        return Err(format!("token create: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(String::from_utf8(out.stdout)?.trim().to_string())
}

fn free_port() -> Res<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn read_body(uri: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {
        "uri": uri,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string()
}

fn search_body(query: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "search", "arguments": {"query": query, "limit": 20},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string()
}

/// One timed request: µs, and the answer, which must be a 200 result.
fn timed(client: &mut HttpClient, method: &str, name: &str, body: &str) -> Res<(f64, Value)> {
    let start = Instant::now();
    let (status, bytes) = client.post(method, Some(name), body)?;
    let us = start.elapsed().as_secs_f64() * 1e6;
    let answer: Value = serde_json::from_slice(&bytes)?;
    if status != 200 || answer.get("result").is_none() {
        return Err(format!("{method} {name}: {status} {answer}").into());
    }
    Ok((us, answer))
}

fn the_uri(path: &str) -> String {
    let (prefix, id) = path.split_once('/').unwrap_or((path, ""));
    let id: String = percent_encoding::utf8_percent_encode(id, ID_SET).to_string();
    format!("orchestra://{prefix}/{id}")
}

/// Every byte but RFC 3986's unreserved ones and `/`.
const ID_SET: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

pub fn measure(bin: &Path, db: &Path, n: usize, seed: u64) -> Res<AuthFigures> {
    step(
        n,
        "credentials: reads with a token, a key, a JWT; searches with a grant",
    );
    let issuer = start_issuer()?;
    let port = free_port()?;
    let public = format!("http://127.0.0.1:{port}/mcp");
    let dir = tempfile::tempdir()?;
    let token = "bench-static-token";
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, token)?;
    let everything = create_key(
        bin,
        db,
        "bench-all",
        &["orchestra:read", "orchestra:search"],
    )?;
    let features = create_key(
        bin,
        db,
        "bench-features",
        &["orchestra:read:features", "orchestra:search"],
    )?;
    let jwt = jwt(&issuer, &public)?;
    let mut server = Server::start(bin, db, port, &public, &issuer, &token_file)?;

    let mut clients = [
        HttpClient::connect(port)?.with_bearer(token),
        HttpClient::connect(port)?.with_bearer(&everything),
        HttpClient::connect(port)?.with_bearer(&jwt),
    ];
    let mut rng = Rng::new(seed, 0xa17);
    let mut figures = AuthFigures::default();
    for round in 0..WARMUP + READ_ROUNDS {
        let i = rng.below(n);
        let path = doc_path(i, &mut Rng::new(seed, i as u64));
        let uri = the_uri(&path);
        let body = read_body(&uri);
        let mut us = [0.0; 3];
        for k in 0..3 {
            let which = (round + k) % 3;
            us[which] = timed(&mut clients[which], "resources/read", &uri, &body)?.0;
        }
        if round >= WARMUP {
            figures.token_us.push(us[0]);
            figures.key_us.push(us[1]);
            figures.jwt_us.push(us[2]);
        }
    }

    let mut all = HttpClient::connect(port)?.with_bearer(&everything);
    let mut some = HttpClient::connect(port)?.with_bearer(&features);
    for query in [RARE_WORDS[0], HALF_WORD] {
        let body = search_body(query);
        let (mut with_all, mut with_some) = (Vec::new(), Vec::new());
        let mut hits = (0, 0);
        for round in 0..WARMUP + SEARCH_ROUNDS {
            let total = |answer: &Value| {
                answer["result"]["structuredContent"]["total"]
                    .as_u64()
                    .unwrap_or(0)
            };
            let (first, second) = if round % 2 == 0 {
                let a = timed(&mut all, "tools/call", "search", &body)?;
                let b = timed(&mut some, "tools/call", "search", &body)?;
                (a, b)
            } else {
                let b = timed(&mut some, "tools/call", "search", &body)?;
                let a = timed(&mut all, "tools/call", "search", &body)?;
                (a, b)
            };
            hits = (total(&first.1), total(&second.1));
            if round >= WARMUP {
                with_all.push(first.0);
                with_some.push(second.0);
            }
        }
        figures.searches.push(SearchPair {
            query: query.to_string(),
            all_us: with_all,
            features_us: with_some,
            hits,
        });
    }
    server.stop();
    Ok(figures)
}

impl AuthFigures {
    pub fn rows(&self) -> Vec<Row> {
        let p50 = |v: &Vec<f64>| percentile_ms(v, 50.0);
        let token = p50(&self.token_us);
        let mut rows = Vec::new();
        for (what, samples) in [
            ("an API key", &self.key_us),
            ("an OAuth JWT, keys cached", &self.jwt_us),
        ] {
            let p = p50(samples);
            rows.push(Row {
                figure: format!(
                    "`resources/read` over HTTP p50 with {what} (raw: the same reads with the static token, interleaved)"
                ),
                unit: "µs",
                raw: Some(token),
                orchestra: Ok(p),
                ratio: ratio(token, p),
                target: format!("≤ {READ_TARGET}×"),
                meets: Some(p <= READ_TARGET * token),
                why: format!("{} rounds", self.token_us.len()),
            });
        }
        for pair in &self.searches {
            let (query, (all_hits, some_hits)) = (&pair.query, pair.hits);
            let (a, s) = (p50(&pair.all_us), p50(&pair.features_us));
            rows.push(Row {
                figure: format!(
                    "search {query:?} p50 with a features-only grant (raw: the same search seeing every prefix)"
                ),
                unit: "µs",
                raw: Some(a),
                orchestra: Ok(s),
                ratio: ratio(a, s),
                target: format!("≤ {SEARCH_TARGET}×"),
                meets: Some(s <= SEARCH_TARGET * a),
                why: format!("{some_hits} of {all_hits} hits"),
            });
        }
        rows
    }

    pub fn to_json(&self) -> Value {
        let p50 = |v: &Vec<f64>| percentile_ms(v, 50.0);
        json!({
            "read_token_p50_us": p50(&self.token_us),
            "read_key_p50_us": p50(&self.key_us),
            "read_jwt_p50_us": p50(&self.jwt_us),
            "searches": self.searches.iter().map(|pair| json!({
                "query": pair.query,
                "all_p50_us": p50(&pair.all_us),
                "features_p50_us": p50(&pair.features_us),
                "all_hits": pair.hits.0,
                "features_hits": pair.hits.1,
            })).collect::<Vec<_>>(),
        })
    }
}

/// The server of the measure, stopped (and waited for) when dropped.
struct Server {
    child: Child,
}

impl Server {
    fn start(
        bin: &Path,
        db: &Path,
        port: u16,
        public: &str,
        issuer: &str,
        token: &Path,
    ) -> Res<Server> {
        let mut child = Command::new(bin)
            .arg("serve")
            .arg("--db")
            .arg(db)
            .args(["--http", &format!("127.0.0.1:{port}")])
            .args([
                "--public-url",
                public,
                "--oauth-issuer",
                issuer,
                "--api-keys",
            ])
            .arg("--token-file")
            .arg(token)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline || child.try_wait()?.is_some() {
                let _ = child.kill();
                return Err("orchestra serve --http with credentials did not start".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(Server { child })
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}
