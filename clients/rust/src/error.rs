//! What a call can answer instead of a result.

use reqwest::Response;

/// What can go wrong.
#[derive(Debug)]
pub enum Error {
    /// An error answer: the HTTP status, the stable code, the message, `Retry-After`.
    Api {
        /// HTTP status.
        status: u16,
        /// The stable code (`map_not_found`, `version_conflict`, ...).
        code: String,
        /// Human-readable text.
        message: String,
        /// Seconds from `Retry-After`, when sent.
        retry_after: Option<u64>,
    },
    /// No (complete) answer within the timeout.
    Timeout,
    /// The connection failed, or an answer could not be read.
    Transport(reqwest::Error),
}

impl Error {
    /// The stable code of an error answer.
    pub fn code(&self) -> Option<&str> {
        match self {
            Error::Api { code, .. } => Some(code),
            _ => None,
        }
    }

    /// The HTTP status of an error answer.
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Api { status, .. } => Some(*status),
            _ => None,
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Api {
                status,
                code,
                message,
                ..
            } => write!(f, "{status} {code}: {message}"),
            Error::Timeout => write!(f, "no answer within the timeout"),
            Error::Transport(e) => write!(f, "transport: {e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<reqwest::Error> for Error {
    fn from(e: reqwest::Error) -> Self {
        if e.is_timeout() {
            Error::Timeout
        } else {
            Error::Transport(e)
        }
    }
}

/// Reads an error answer.
pub(crate) async fn error_of(resp: Response) -> Error {
    let status = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok());
    let text = resp.text().await.unwrap_or_default();
    let (code, message) = match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(v) if v["error"]["code"].is_string() => (
            v["error"]["code"].as_str().unwrap_or_default().to_owned(),
            v["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        ),
        _ => ("internal".to_owned(), text),
    };
    Error::Api {
        status,
        code,
        message,
        retry_after,
    }
}
