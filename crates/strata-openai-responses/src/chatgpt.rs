//! The ChatGPT-plan (Codex) backend's own headers. Its access token is an OAuth JWT whose
//! `https://api.openai.com/auth` claim names the ChatGPT account; the backend wants that
//! account in `chatgpt-account-id` beside the token (as Pi's `openai-codex` provider sends it).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;
use strata_provider::ProviderError;

/// The JWT claim that holds the account (an object with `chatgpt_account_id`).
pub const AUTH_CLAIM: &str = "https://api.openai.com/auth";

/// `OpenAI-Beta` value of the backend's SSE Responses endpoint.
pub const RESPONSES_BETA: &str = "responses=experimental";

/// Who sends the request (the backend logs it; Codex CLI and Pi each send their own name).
pub const ORIGINATOR: &str = "strata";

/// The ChatGPT account id an access token carries. The error names the row and the claim,
/// never the token.
pub fn account_id(token: &str, row: &str) -> Result<String, ProviderError> {
    let missing = |why: &str| ProviderError::Auth {
        status: 0,
        request_id: None,
        body: format!(
            "provider `{row}`: the access token {why}, so the ChatGPT account (claim \
             `{AUTH_CLAIM}`.chatgpt_account_id) is unknown; use the token of a ChatGPT login"
        ),
    };
    let mut parts = token.split('.');
    let (Some(_), Some(payload), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(missing("is not a JWT"));
    };
    let bytes = URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .map_err(|_| missing("has a payload that is not base64url"))?;
    let claims: Value =
        serde_json::from_slice(&bytes).map_err(|_| missing("has a payload that is not JSON"))?;
    claims
        .get(AUTH_CLAIM)
        .and_then(|auth| auth.get("chatgpt_account_id"))
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| missing("names no account"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: &str) -> String {
        format!(
            "{}.{}.sig",
            URL_SAFE_NO_PAD.encode(r#"{"alg":"RS256"}"#),
            URL_SAFE_NO_PAD.encode(claims)
        )
    }

    #[test]
    fn the_account_comes_from_the_auth_claim() {
        let token = jwt(r#"{"https://api.openai.com/auth":{"chatgpt_account_id":"acc-42"}}"#);
        assert_eq!(account_id(&token, "openai-codex").unwrap(), "acc-42");
    }

    #[test]
    fn a_token_without_an_account_is_refused_without_quoting_it() {
        for token in [
            "sk-plain-key".to_owned(),
            "a.%%%.c".to_owned(),
            jwt(r#"{"sub":"user"}"#),
            jwt(r#"{"https://api.openai.com/auth":{"chatgpt_account_id":""}}"#),
        ] {
            let error = account_id(&token, "openai-codex").unwrap_err().to_string();
            assert!(error.contains("openai-codex"), "{error}");
            assert!(error.contains("chatgpt_account_id"), "{error}");
            assert!(!error.contains(&token), "{error}");
        }
    }
}
