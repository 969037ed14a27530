//! The `strata-mock` binary: prints its address, plays a script, appends records to a file.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

#[tokio::test]
async fn the_binary_prints_its_address_plays_the_script_and_records() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("requests.jsonl");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/demo.toml");
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata-mock"))
        .args(["--addr", "127.0.0.1:0", "--script"])
        .arg(&script)
        .arg("--record")
        .arg(&record)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line.trim().to_owned();
    assert!(base.starts_with("http://127.0.0.1:"), "{base}");
    let reply: Value = reqwest::Client::new()
        .post(format!("{base}/v1/chat/completions"))
        .json(&json!({"model": "gpt-5", "tools": [{"type": "function", "function": {"name": "read", "parameters": {"type": "object", "properties": {"path": {}}}}}],
            "messages": [{"role": "user", "content": "fix it"}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        reply["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
        r#"{"path":"src/greeting.rs"}"#
    );
    let lines = std::fs::read_to_string(&record).unwrap();
    let records: Vec<strata_mock::RequestRecord> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].turn, Some(0));
}
