//! Protocol eras on one stream: which era a request belongs to, and the requests each era refuses.
//!
//! The first request decides: `initialize` selects the handshake era
//! (2024-11-05 … 2025-11-25); a request whose `_meta` carries
//! `io.modelcontextprotocol/protocolVersion` selects the stateless 2026-07-28
//! era. Mixing later is refused: `initialize` on a stateless stream is
//! `-32022`, an enveloped request on a handshake stream `-32600`.

use serde_json::Value;

use super::error::RpcError;

pub const STATELESS_VERSION: &str = "2026-07-28";
/// Oldest first; the last is what an unknown requested version gets.
pub const HANDSHAKE_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    Handshake,
    Stateless,
}

/// What to do with an admitted request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admitted {
    /// Answer `initialize` with this protocol version.
    Initialize { version: &'static str },
    /// Handle the request in this era.
    Request(Era),
}

#[derive(Debug, Default)]
pub struct Session {
    era: Option<Era>,
    /// The handshake version `initialize` agreed on.
    negotiated: Option<&'static str>,
}

impl Session {
    /// The protocol version requests of this session are answered in: what
    /// `initialize` agreed on, 2026-07-28 for stateless requests, the latest
    /// handshake version for a request that came before any `initialize`.
    pub fn version(&self, era: Era) -> &'static str {
        match era {
            Era::Stateless => STATELESS_VERSION,
            Era::Handshake => self
                .negotiated
                .unwrap_or(HANDSHAKE_VERSIONS[HANDSHAKE_VERSIONS.len() - 1]),
        }
    }

    /// Admits one request, in the order requests arrive.
    pub fn admit(&mut self, method: &str, params: Option<&Value>) -> Result<Admitted, RpcError> {
        let meta = params.and_then(|p| p.get("_meta"));
        let requested = meta.and_then(|m| m.get(META_VERSION));

        if method == "initialize" {
            return self.initialize(params);
        }
        let Some(requested) = requested else {
            if method == "server/discover" {
                // Only the 2026-07-28 envelope knows this method.
                return Err(RpcError::method_not_found(method));
            }
            if self.era == Some(Era::Stateless) {
                return Err(RpcError::invalid_params(format!(
                    "missing _meta {META_VERSION}: this stream speaks {STATELESS_VERSION}"
                )));
            }
            // Before `initialize`, a bare request is answered as the
            // handshake era would, without deciding the stream's era.
            return Ok(Admitted::Request(Era::Handshake));
        };
        if self.era == Some(Era::Handshake) {
            return Err(RpcError::invalid_request(format!(
                "this stream was initialized with the handshake protocol: requests must not carry _meta {META_VERSION}"
            )));
        }
        if requested.as_str() != Some(STATELESS_VERSION) {
            return Err(RpcError::unsupported_version(
                requested,
                &[STATELESS_VERSION],
            ));
        }
        if !meta
            .and_then(|m| m.get(META_CAPABILITIES))
            .is_some_and(Value::is_object)
        {
            return Err(RpcError::invalid_params(format!(
                "missing _meta {META_CAPABILITIES}"
            )));
        }
        self.era = Some(Era::Stateless);
        Ok(Admitted::Request(Era::Stateless))
    }

    fn initialize(&mut self, params: Option<&Value>) -> Result<Admitted, RpcError> {
        let requested = params
            .and_then(|p| p.get("protocolVersion"))
            .cloned()
            .unwrap_or(Value::Null);
        match self.era {
            Some(Era::Stateless) => Err(RpcError::unsupported_version(
                &requested,
                &[STATELESS_VERSION],
            )),
            Some(Era::Handshake) => Err(RpcError::invalid_request("already initialized")),
            None => {
                let Some(requested) = requested.as_str() else {
                    return Err(RpcError::invalid_params(
                        "initialize needs params.protocolVersion (a string)",
                    ));
                };
                let latest = HANDSHAKE_VERSIONS[HANDSHAKE_VERSIONS.len() - 1];
                let version = HANDSHAKE_VERSIONS
                    .into_iter()
                    .find(|v| *v == requested)
                    .unwrap_or(latest);
                self.era = Some(Era::Handshake);
                self.negotiated = Some(version);
                Ok(Admitted::Initialize { version })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn envelope(version: &str) -> Value {
        json!({"_meta": {META_VERSION: version, META_CAPABILITIES: {}}})
    }

    /// Feeds requests in order; each expected value is the admission or the error code.
    #[track_caller]
    fn check(requests: &[(&str, Value)], expected: &[Result<Admitted, i32>]) {
        let mut session = Session::default();
        let got: Vec<Result<Admitted, i32>> = requests
            .iter()
            .map(|(method, params)| {
                let params = (!params.is_null()).then_some(params);
                session.admit(method, params).map_err(|e| e.code())
            })
            .collect();
        assert_eq!(got, expected);
    }

    const HANDSHAKE: Result<Admitted, i32> = Ok(Admitted::Request(Era::Handshake));
    const STATELESS: Result<Admitted, i32> = Ok(Admitted::Request(Era::Stateless));

    #[test]
    fn handshake_stream() {
        check(
            &[
                ("initialize", json!({"protocolVersion": "2025-06-18"})),
                ("resources/list", Value::Null),
                ("resources/read", envelope(STATELESS_VERSION)),
                ("initialize", json!({"protocolVersion": "2025-06-18"})),
                ("server/discover", Value::Null),
            ],
            &[
                Ok(Admitted::Initialize {
                    version: "2025-06-18",
                }),
                HANDSHAKE,
                Err(-32600),
                Err(-32600),
                Err(-32601),
            ],
        );
    }

    #[test]
    fn unknown_handshake_version_gets_the_latest() {
        check(
            &[("initialize", json!({"protocolVersion": "1999-01-01"}))],
            &[Ok(Admitted::Initialize {
                version: "2025-11-25",
            })],
        );
        check(&[("initialize", json!({}))], &[Err(-32602)]);
    }

    #[test]
    fn stateless_stream() {
        check(
            &[
                ("server/discover", envelope(STATELESS_VERSION)),
                ("resources/list", envelope(STATELESS_VERSION)),
                ("resources/list", envelope("2099-01-01")),
                (
                    "resources/list",
                    json!({"_meta": {META_VERSION: STATELESS_VERSION}}),
                ),
                ("resources/list", json!({"_meta": {"progressToken": 1}})),
                ("initialize", json!({"protocolVersion": "2025-11-25"})),
            ],
            &[
                STATELESS,
                STATELESS,
                Err(-32022),
                Err(-32602),
                Err(-32602),
                Err(-32022),
            ],
        );
    }

    #[test]
    fn bare_requests_before_any_era() {
        check(
            &[
                ("server/discover", Value::Null),
                ("ping", json!({"_meta": {"progressToken": 1}})),
                ("initialize", json!({"protocolVersion": "2025-11-25"})),
            ],
            &[
                Err(-32601),
                HANDSHAKE,
                Ok(Admitted::Initialize {
                    version: "2025-11-25",
                }),
            ],
        );
    }

    #[test]
    fn a_refused_first_envelope_decides_nothing() {
        check(
            &[
                ("resources/list", envelope("2099-01-01")),
                ("initialize", json!({"protocolVersion": "2025-11-25"})),
            ],
            &[
                Err(-32022),
                Ok(Admitted::Initialize {
                    version: "2025-11-25",
                }),
            ],
        );
    }
}
