//! Scoped API keys: their text (`orc_` and 32 random bytes, base64url), the hash a store keeps instead of the key, and the names and lifetimes `orchestra token create` takes.
//!
//! The prefix lets a server tell a key from a JWT without parsing it, and
//! lets secret scanners find a key pasted where it should not be. Only the
//! blake3 hash of a key is stored: a copy of the database gives no key.

use std::time::Duration;

use base64::Engine;

/// How long a server trusts what it read of a key: the longest a revoked
/// key may still be let in, on every server of the database.
pub const CACHE: Duration = Duration::from_secs(2);

/// What every key starts with.
pub const KEY_PREFIX: &str = "orc_";

/// A new key: 256 random bits from the operating system.
pub fn generate() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system gives random bytes");
    format!(
        "{KEY_PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    )
}

/// Whether `token` has a key's form (it may still be no key).
pub fn looks_like_key(token: &str) -> bool {
    token.starts_with(KEY_PREFIX)
}

/// The hash a store keeps of `key`, in hex.
pub fn hash(key: &str) -> String {
    blake3::hash(key.as_bytes()).to_hex().to_string()
}

/// A key's name: what `token revoke` and the log name it by. Letters,
/// digits, `-`, `_` and `.`, up to 64.
pub fn check_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    match valid {
        true => Ok(()),
        false => Err(format!(
            "invalid key name {name:?}: use up to 64 letters, digits, '-', '_' or '.'"
        )),
    }
}

/// A lifetime such as `30d`, `12h` or `90m` (humantime's forms).
pub fn parse_lifetime(text: &str) -> Result<Duration, String> {
    let lifetime = humantime::parse_duration(text.trim())
        .map_err(|e| format!("invalid lifetime {text:?}: {e} (for example 30d, 12h)"))?;
    if lifetime < Duration::from_secs(60) {
        return Err(format!("invalid lifetime {text:?}: at least a minute"));
    }
    Ok(lifetime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_long_distinct_and_url_safe() {
        let keys: Vec<String> = (0..200).map(|_| generate()).collect();
        for key in &keys {
            assert!(looks_like_key(key));
            assert_eq!(key.len(), KEY_PREFIX.len() + 43, "{key}");
            assert!(
                key[4..]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            );
        }
        let distinct: std::collections::HashSet<_> = keys.iter().collect();
        assert_eq!(distinct.len(), keys.len());
        assert_ne!(hash(&keys[0]), hash(&keys[1]));
        assert_eq!(hash(&keys[0]).len(), 64);
        assert!(!hash(&keys[0]).contains(&keys[0][4..]));
    }

    #[test]
    fn names_and_lifetimes() {
        assert!(check_name("ci").is_ok());
        assert!(check_name("agent-7.prod_x").is_ok());
        for bad in ["", "a b", "x/y", "ü", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(parse_lifetime("30d"), Ok(Duration::from_secs(30 * 86400)));
        assert_eq!(parse_lifetime("12h"), Ok(Duration::from_secs(12 * 3600)));
        assert!(parse_lifetime("10s").is_err());
        assert!(parse_lifetime("soon").is_err());
    }
}
