//! JSON-RPC errors: the codes orchestra answers with, and the one place that turns core errors into them.

use rmcp::model::{ErrorCode, ErrorData};
use serde_json::{Value, json};

use crate::cursor::CursorError;
use crate::uri::UriError;

/// `HeaderMismatch` of the 2026-07-28 Streamable HTTP transport.
pub const HEADER_MISMATCH: i32 = -32020;

/// An error response's `error` member.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError(pub ErrorData);

impl RpcError {
    fn new(code: ErrorCode, message: impl Into<String>, data: Option<Value>) -> RpcError {
        RpcError(ErrorData::new(code, message.into(), data))
    }

    pub fn parse_error(message: impl Into<String>) -> RpcError {
        RpcError::new(ErrorCode::PARSE_ERROR, message, None)
    }

    pub fn invalid_request(message: impl Into<String>) -> RpcError {
        RpcError::new(ErrorCode::INVALID_REQUEST, message, None)
    }

    pub fn method_not_found(method: &str) -> RpcError {
        RpcError::new(
            ErrorCode::METHOD_NOT_FOUND,
            "Method not found",
            Some(Value::from(method)),
        )
    }

    pub fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(ErrorCode::INVALID_PARAMS, message, None)
    }

    pub fn internal(message: impl Into<String>) -> RpcError {
        RpcError::new(ErrorCode::INTERNAL_ERROR, message, None)
    }

    /// 2026-07-28 over HTTP: a header that is missing or says otherwise than
    /// the body (`Mcp-Method`, `Mcp-Name`, `MCP-Protocol-Version`).
    pub fn header_mismatch(message: impl Into<String>) -> RpcError {
        RpcError::new(ErrorCode(HEADER_MISMATCH), message, None)
    }

    pub fn unsupported_version(requested: &Value, supported: &[&str]) -> RpcError {
        RpcError::new(
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            Some(json!({ "supported": supported, "requested": requested })),
        )
    }

    /// A resource that does not exist: `-32002` in the handshake era,
    /// `-32602` from 2026-07-28 on (which forbids `-32002`).
    pub fn not_found(uri: &str, stateless: bool) -> RpcError {
        let code = if stateless {
            ErrorCode::INVALID_PARAMS
        } else {
            ErrorCode::RESOURCE_NOT_FOUND
        };
        RpcError::new(code, "Resource not found", Some(json!({ "uri": uri })))
    }

    /// A document too large to send in one response.
    pub fn too_large(uri: &str, size: u64, max: u64) -> RpcError {
        RpcError::new(
            ErrorCode::INTERNAL_ERROR,
            format!("the document is {size} bytes, more than the {max} bytes a response may carry"),
            Some(json!({ "uri": uri, "size": size })),
        )
    }

    pub fn code(&self) -> i32 {
        self.0.code.0
    }
}

impl From<UriError> for RpcError {
    fn from(e: UriError) -> RpcError {
        RpcError::invalid_params(format!("invalid uri: {e}"))
    }
}

impl From<CursorError> for RpcError {
    fn from(e: CursorError) -> RpcError {
        RpcError::invalid_params(e.to_string())
    }
}

/// Anything unexpected (the database, a bug) is an internal error; the
/// details go to the log, not to the client. A database that cannot be
/// reached now is a warning: this server is sound, and a request may
/// succeed later.
impl From<anyhow::Error> for RpcError {
    fn from(e: anyhow::Error) -> RpcError {
        match crate::store::is_unavailable(&e) {
            true => {
                tracing::warn!("{e:#}");
                RpcError::internal(crate::store::Unavailable.to_string())
            }
            false => {
                tracing::error!("internal error: {e:#}");
                RpcError::internal("Internal error")
            }
        }
    }
}
