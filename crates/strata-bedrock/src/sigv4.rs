//! AWS Signature Version 4 for one HTTP request (header form, signed payload).

use std::time::{SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use crate::credentials::AwsCredentials;

type HmacSha256 = Hmac<Sha256>;

/// What is signed: method, path (already percent-encoded), query, headers and body.
#[derive(Debug, Clone)]
pub struct SignableRequest<'a> {
    /// HTTP method, e.g. `POST`.
    pub method: &'a str,
    /// Request path as sent, percent-encoded (`/model/a%3A0/converse-stream`).
    pub path: &'a str,
    /// Query pairs, unencoded.
    pub query: &'a [(&'a str, &'a str)],
    /// Headers to sign besides `x-amz-date` / `x-amz-security-token` (must include `host`).
    pub headers: &'a [(&'a str, &'a str)],
    /// The body.
    pub body: &'a [u8],
}

/// Where and when the signature applies.
#[derive(Debug, Clone, Copy)]
pub struct SigningScope<'a> {
    /// AWS region, e.g. `us-east-1`.
    pub region: &'a str,
    /// Service name, `bedrock` for the Bedrock runtime.
    pub service: &'a str,
    /// Signing time.
    pub time: SystemTime,
}

/// Headers to add to the request: `x-amz-date`, `x-amz-content-sha256`, the session token
/// when there is one, and `authorization`.
pub fn sign(
    request: &SignableRequest<'_>,
    scope: &SigningScope<'_>,
    credentials: &AwsCredentials,
) -> Vec<(String, String)> {
    sign_inner(request, scope, credentials, true)
}

fn sign_inner(
    request: &SignableRequest<'_>,
    scope: &SigningScope<'_>,
    credentials: &AwsCredentials,
    content_sha_header: bool,
) -> Vec<(String, String)> {
    let (amz_date, date) = amz_dates(scope.time);
    let payload_hash = hex(&Sha256::digest(request.body));
    let mut headers: Vec<(String, String)> = request
        .headers
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), normalize_space(v)))
        .collect();
    let mut added = vec![("x-amz-date".to_owned(), amz_date.clone())];
    if content_sha_header {
        added.push(("x-amz-content-sha256".to_owned(), payload_hash.clone()));
    }
    if let Some(token) = &credentials.session_token {
        added.push(("x-amz-security-token".to_owned(), token.expose().to_owned()));
    }
    headers.extend(added.iter().cloned());
    headers.sort();
    let signed_headers: Vec<&str> = headers.iter().map(|(k, _)| k.as_str()).collect();
    let signed_headers = signed_headers.join(";");
    let canonical_headers: String = headers.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();

    let mut query: Vec<(String, String)> = request
        .query
        .iter()
        .map(|(k, v)| (uri_encode(k, true), uri_encode(v, true)))
        .collect();
    query.sort();
    let canonical_query: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();

    // Every service but S3 signs the path URI-encoded once more.
    let canonical_uri = if request.path.is_empty() {
        "/".to_owned()
    } else {
        uri_encode(request.path, false)
    };
    let canonical_request = format!(
        "{}\n{}\n{}\n{}\n{}\n{}",
        request.method,
        canonical_uri,
        canonical_query.join("&"),
        canonical_headers,
        signed_headers,
        payload_hash
    );
    let credential_scope = format!("{date}/{}/{}/aws4_request", scope.region, scope.service);
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{credential_scope}\n{}",
        hex(&Sha256::digest(canonical_request.as_bytes()))
    );
    let key = signing_key(
        credentials.secret_access_key.expose(),
        &date,
        scope.region,
        scope.service,
    );
    let signature = hex(&hmac(&key, string_to_sign.as_bytes()));
    added.push((
        "authorization".to_owned(),
        format!(
            "AWS4-HMAC-SHA256 Credential={}/{credential_scope}, SignedHeaders={signed_headers}, Signature={signature}",
            credentials.access_key_id
        ),
    ));
    added
}

/// The derived signing key: HMAC chain over date, region, service and `aws4_request`.
pub fn signing_key(secret: &str, date: &str, region: &str, service: &str) -> Vec<u8> {
    let k_date = hmac(format!("AWS4{secret}").as_bytes(), date.as_bytes());
    let k_region = hmac(&k_date, region.as_bytes());
    let k_service = hmac(&k_region, service.as_bytes());
    hmac(&k_service, b"aws4_request")
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC takes keys of any length, so construction cannot fail.
    match HmacSha256::new_from_slice(key) {
        Ok(mut mac) => {
            mac.update(data);
            mac.finalize().into_bytes().to_vec()
        }
        Err(_) => Vec::new(),
    }
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

/// RFC 3986 encoding as SigV4 wants it; `/` is kept unless `encode_slash`.
pub fn uri_encode(text: &str, encode_slash: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(b));
            }
            b'/' if !encode_slash => out.push('/'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn normalize_space(value: &str) -> String {
    value.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `(YYYYMMDD'T'HHMMSS'Z', YYYYMMDD)` for `time` in UTC.
pub fn amz_dates(time: SystemTime) -> (String, String) {
    let secs = time
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    let date = format!("{y:04}{m:02}{d:02}");
    let stamp = format!(
        "{date}T{:02}{:02}{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    );
    (stamp, date)
}

/// Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::time::Duration;
    use strata_provider::ApiKey;

    fn example_credentials() -> AwsCredentials {
        AwsCredentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: ApiKey::new("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
            session_token: None,
        }
    }

    /// 2015-08-30T12:36:00Z, the time of the AWS SigV4 test suite.
    fn suite_time() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_440_938_160)
    }

    #[test]
    fn dates_format_in_utc() {
        assert_eq!(
            amz_dates(suite_time()),
            ("20150830T123600Z".to_owned(), "20150830".to_owned())
        );
        assert_eq!(amz_dates(UNIX_EPOCH).1, "19700101");
        // 2024-02-29 (leap day) 23:59:59.
        let leap = UNIX_EPOCH + Duration::from_secs(1_709_251_199);
        assert_eq!(amz_dates(leap).0, "20240229T235959Z");
    }

    #[test]
    fn signing_key_matches_the_aws_documentation_example() {
        let key = signing_key(
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            "20120215",
            "us-east-1",
            "iam",
        );
        assert_eq!(
            hex(&key),
            "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d"
        );
    }

    #[test]
    fn get_vanilla_from_the_aws_test_suite() {
        let request = SignableRequest {
            method: "GET",
            path: "/",
            query: &[],
            headers: &[("Host", "example.amazonaws.com")],
            body: b"",
        };
        let scope = SigningScope {
            region: "us-east-1",
            service: "service",
            time: suite_time(),
        };
        let headers = sign_inner(&request, &scope, &example_credentials(), false);
        assert_eq!(
            headers.last().map(|(_, v)| v.as_str()),
            Some(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
            )
        );
    }

    #[test]
    fn session_token_is_signed_and_sent() {
        let mut credentials = example_credentials();
        credentials.session_token = Some(ApiKey::new("TOKEN"));
        let request = SignableRequest {
            method: "POST",
            path: "/model/anthropic.claude%3A0/converse-stream",
            query: &[],
            headers: &[("host", "bedrock-runtime.us-east-1.amazonaws.com")],
            body: b"{}",
        };
        let scope = SigningScope {
            region: "us-east-1",
            service: "bedrock",
            time: suite_time(),
        };
        let headers = sign(&request, &scope, &credentials);
        let names: Vec<&str> = headers.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "x-amz-date",
                "x-amz-content-sha256",
                "x-amz-security-token",
                "authorization"
            ]
        );
        assert!(
            headers[3].1.contains(
                "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token"
            )
        );
    }

    #[test]
    fn uri_encoding_follows_rfc3986() {
        assert_eq!(uri_encode("a b/c:d~", false), "a%20b/c%3Ad~");
        assert_eq!(uri_encode("a/b", true), "a%2Fb");
        assert_eq!(uri_encode("%3A", false), "%253A");
    }
}
