//! The authorized_user refresh flow against a local token endpoint.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use strata_google::{AdcFile, GoogleCredentials};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Mutex;

/// Serves `{"access_token": …}` and counts the refreshes (and the last form body).
pub async fn token_server() -> (String, Arc<AtomicUsize>, Arc<Mutex<String>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/token", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let last = Arc::new(Mutex::new(String::new()));
    let (c, l) = (count.clone(), last.clone());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut buf = vec![0u8; 4096];
            let n = socket.read(&mut buf).await.unwrap_or(0);
            let text = String::from_utf8_lossy(&buf[..n]).to_string();
            *l.lock().await = text.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
            let n = c.fetch_add(1, Ordering::SeqCst) + 1;
            let body = format!(
                r#"{{"access_token":"ya29.token-{n}","expires_in":3599,"token_type":"Bearer"}}"#
            );
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(reply.as_bytes()).await;
        }
    });
    (url, count, last)
}

#[tokio::test]
async fn refresh_token_is_exchanged_once_and_cached() {
    let (url, count, last) = token_server().await;
    let Ok(AdcFile::AuthorizedUser(user)) = AdcFile::parse(
        r#"{"type":"authorized_user","client_id":"cid.apps","client_secret":"s3cret","refresh_token":"1//refresh+tok","token_uri":"https://example.invalid/token"}"#,
        "adc.json",
    ) else {
        panic!("an authorized_user file")
    };
    assert_eq!(
        user.token_uri.as_deref(),
        Some("https://example.invalid/token")
    );
    let credentials = GoogleCredentials::AuthorizedUser {
        user,
        token_url: url,
        cached: Mutex::new(None),
    };
    let client = reqwest::Client::new();
    let first = credentials.bearer(&client).await.unwrap().unwrap();
    let second = credentials.bearer(&client).await.unwrap().unwrap();
    assert_eq!(first.expose(), "ya29.token-1");
    assert_eq!(second.expose(), "ya29.token-1");
    assert_eq!(count.load(Ordering::SeqCst), 1);
    assert_eq!(
        *last.lock().await,
        "grant_type=refresh_token&client_id=cid.apps&client_secret=s3cret&refresh_token=1%2F%2Frefresh%2Btok"
    );
}
