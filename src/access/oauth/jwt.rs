//! The rules a JWT access token must pass: its header (algorithm, `kid`, `typ`) before any key is looked up, then the key's type, the signature and the claims.

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde::Deserialize;

use super::jwks::Key;
use super::{Claims, Expected, Rejection};

/// Asymmetric algorithms only: never `none`, never HS* (a token HMAC-signed
/// with the bytes of a public key must not pass).
const ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Clock skew allowed on `exp` and `nbf`, in seconds.
pub(super) const LEEWAY: u64 = 60;

/// RFC 9068's `at+jwt` (with or without `application/`), or the plain `JWT`
/// that Keycloak and Entra ID write; any other `typ` (`id+jwt`, `dpop+jwt`,
/// a logout token) is another kind of token.
const TYPES: [&str; 3] = ["at+jwt", "application/at+jwt", "jwt"];

/// Three non-empty base64url parts: the shape of a JWS compact
/// serialization. Anything else is an opaque token.
pub(super) fn is_jwt(token: &str) -> bool {
    let parts: Vec<&str> = token.split('.').collect();
    parts.len() == 3
        && parts.iter().all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// What the header names, once it passed.
pub(super) struct Header {
    pub alg: Algorithm,
    pub kid: String,
}

/// The header's rules, checked before any key is looked up, so that a token
/// refused for its header costs no fetch.
pub(super) fn header(token: &str) -> Result<Header, Rejection> {
    // An unknown `alg` (`none`, `Ed25519`) does not parse.
    let header = jsonwebtoken::decode_header(token)
        .map_err(|_| Rejection::Invalid("header malformed or its alg unknown".into()))?;
    if !ALGORITHMS.contains(&header.alg) {
        return Err(Rejection::Invalid(format!(
            "algorithm {:?} is not accepted",
            header.alg
        )));
    }
    if let Some(typ) = &header.typ
        && !TYPES.iter().any(|t| t.eq_ignore_ascii_case(typ))
    {
        return Err(Rejection::Invalid(
            "typ is neither at+jwt nor JWT: not an access token".into(),
        ));
    }
    let Some(kid) = header.kid else {
        return Err(Rejection::Invalid("no kid in the header".into()));
    };
    Ok(Header {
        alg: header.alg,
        kid,
    })
}

/// The claims orchestra reads; the rest are ignored. Every field is
/// optional here so that `jsonwebtoken`'s own checks name what is missing.
#[derive(Deserialize)]
struct Raw {
    sub: Option<String>,
    iss: Option<String>,
    exp: Option<f64>,
    client_id: Option<String>,
    azp: Option<String>,
    scope: Option<Scopes>,
    scp: Option<Scopes>,
}

#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum Scopes {
    Text(String),
    List(Vec<String>),
}

/// Every scope of `lists` once, in order.
pub(super) fn scopes<'a>(lists: impl IntoIterator<Item = &'a Scopes>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for list in lists {
        let items: Vec<&str> = match list {
            Scopes::Text(text) => text.split_whitespace().collect(),
            Scopes::List(items) => items.iter().map(String::as_str).collect(),
        };
        for item in items {
            if !item.is_empty() && !out.iter().any(|s| s == item) {
                out.push(item.to_owned());
            }
        }
    }
    out
}

/// The signature under `key` and the claims: `iss` exactly the issuer,
/// `aud` (a string or an array) naming one of ours, `exp` present, `exp` and
/// `nbf` within the leeway, `sub` present.
pub(super) fn claims(
    token: &str,
    header: &Header,
    key: &Key,
    expected: &Expected,
) -> Result<Claims, Rejection> {
    if !key.fits(header.alg) {
        return Err(Rejection::Invalid(format!(
            "algorithm {:?} does not fit the key its kid names",
            header.alg
        )));
    }
    let mut validation = Validation::new(header.alg);
    validation.leeway = LEEWAY;
    validation.validate_exp = true;
    validation.validate_nbf = true;
    validation.validate_aud = true;
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    validation.set_issuer(&[&expected.issuer]);
    validation.set_audience(&expected.audiences);
    let data = jsonwebtoken::decode::<Raw>(token, &key.decoding, &validation)
        .map_err(|e| Rejection::Invalid(reason(e.kind())))?;
    let raw = data.claims;
    // `jsonwebtoken` accepts an `iss` array that contains ours; a JWT's
    // `iss` is one string.
    let (Some(issuer), Some(subject), Some(exp)) = (raw.iss, raw.sub, raw.exp) else {
        return Err(Rejection::Invalid("iss, sub or exp malformed".into()));
    };
    if issuer != expected.issuer {
        return Err(Rejection::Invalid("wrong issuer".into()));
    }
    Ok(Claims {
        issuer,
        subject: Some(subject),
        client_id: raw.client_id.or(raw.azp),
        scopes: scopes(raw.scope.iter().chain(raw.scp.iter())),
        expires_at: exp as u64,
    })
}

/// What was wrong, in words that quote nothing from the token (the errors of
/// base64 and JSON would).
fn reason(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::InvalidSignature => "bad signature".into(),
        ErrorKind::ExpiredSignature => "expired".into(),
        ErrorKind::ImmatureSignature => "not valid yet (nbf)".into(),
        ErrorKind::InvalidIssuer => "wrong issuer".into(),
        ErrorKind::InvalidAudience => "not for this server (aud)".into(),
        // The claim names come from our own list of required claims.
        ErrorKind::MissingRequiredClaim(claim) => format!("no {claim} claim"),
        ErrorKind::InvalidClaimFormat(claim) => format!("{claim} claim malformed"),
        ErrorKind::InvalidAlgorithm => "algorithm does not fit the key".into(),
        ErrorKind::InvalidEcdsaKey
        | ErrorKind::InvalidEddsaKey
        | ErrorKind::InvalidRsaKey(_)
        | ErrorKind::InvalidKeyFormat => "the issuer's key is unusable".into(),
        ErrorKind::Json(_) => "malformed JSON or a claim of the wrong type".into(),
        ErrorKind::Base64(_) | ErrorKind::Utf8(_) | ErrorKind::InvalidToken => "malformed".into(),
        _ => "refused by the JWT library".into(),
    }
}
