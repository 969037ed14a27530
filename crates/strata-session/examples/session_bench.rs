//! Generates a 100,000-entry (~100 MB) Pi-format session, then reports open time, open + context
//! inputs time, append + incremental update time, and the peak memory of a separate process that
//! only opens the file and reads the context inputs.
//!
//! `cargo run --release -p strata-session --example session_bench [-- ENTRIES]`
//! (`-- --generate PATH [ENTRIES]` only writes the file; `-- --child PATH` measures one open;
//! `-- --listing` times listing 1,000 sessions of about 1 MB each, cold and with the index.)

use std::process::Command;
use std::time::{Duration, Instant};

use strata_session::{AgentMessage, MessageContent, Session, UserMessage, WriteOptions};

#[path = "../benches/support/workload.rs"]
mod workload;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--child-open") {
        // Open only, for profiling.
        let path = args.get(2).ok_or("--child-open needs a path")?;
        let opened = Session::open(path)?;
        println!(
            "{} {}",
            opened.session.tree().len(),
            peak_rss_kib().unwrap_or(0)
        );
        return Ok(());
    }
    if args.get(1).map(String::as_str) == Some("--child") {
        // The measured process: open + context inputs, then report the high-water mark.
        let path = args.get(2).ok_or("--child needs a path")?;
        let opened = Session::open(path)?;
        let inputs = workload::context_inputs(opened.session.tree())?;
        std::hint::black_box((&inputs.thinking, &inputs.model));
        println!("{} {}", inputs.chain.len(), peak_rss_kib().unwrap_or(0));
        return Ok(());
    }
    if args.get(1).map(String::as_str) == Some("--generate") {
        // Only write the file (e.g. to time Pi on the same input).
        let path = args.get(2).ok_or("--generate needs a path")?;
        let entries: usize = args
            .get(3)
            .map(|n| n.parse())
            .transpose()?
            .unwrap_or(100_000);
        let generated = workload::generate(std::path::Path::new(path), entries)?;
        println!(
            "{path}: {} entries, {} bytes",
            generated.entries, generated.bytes
        );
        return Ok(());
    }
    if args.get(1).map(String::as_str) == Some("--listing") {
        return listing();
    }
    let entries: usize = args
        .get(1)
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(100_000);
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("large.jsonl");
    let generated = workload::generate(&path, entries)?;
    let megabytes = generated.bytes as f64 / 1e6;
    println!("file: {} entries, {megabytes:.1} MB", generated.entries);

    let mut open_times = Vec::new();
    let mut context_times = Vec::new();
    let mut chain_len = 0;
    for _ in 0..11 {
        let start = Instant::now();
        let opened = Session::open(&path)?;
        open_times.push(start.elapsed());
        drop(opened);
        let start = Instant::now();
        let opened = Session::open(&path)?;
        let inputs = workload::context_inputs(opened.session.tree())?;
        context_times.push(start.elapsed());
        std::hint::black_box((&inputs.thinking, &inputs.model));
        chain_len = inputs.chain.len();
    }
    println!(
        "open: median {:.1} ms of 11",
        median(open_times).as_secs_f64() * 1e3
    );
    println!(
        "open + context inputs ({chain_len} typed entries after the last compaction): median {:.1} ms of 11",
        median(context_times).as_secs_f64() * 1e3
    );

    let child = Command::new(std::env::current_exe()?)
        .arg("--child")
        .arg(&path)
        .output()?;
    let report = String::from_utf8_lossy(&child.stdout);
    let peak_kib: f64 = report
        .split_whitespace()
        .nth(1)
        .and_then(|kib| kib.parse().ok())
        .unwrap_or(0.0);
    let peak_mb = peak_kib * 1024.0 / 1e6;
    println!(
        "peak memory (VmHWM) of open + context inputs: {peak_mb:.1} MB = {:.2}x the file",
        peak_mb / megabytes
    );

    let mut session = Session::open_writable(&path, WriteOptions::default())?.session;
    let message = AgentMessage::User(UserMessage {
        content: MessageContent::Text("one more question about the tree".into()),
        timestamp: 1_768_471_204_000,
        extra: Default::default(),
    });
    let mut append_times = Vec::new();
    for _ in 0..200 {
        let start = Instant::now();
        let id = session.append_message(message.clone())?;
        let entry = session.tree().entry(&id)?;
        append_times.push(start.elapsed());
        std::hint::black_box(entry);
    }
    println!(
        "append one entry + typed entry of the new leaf: median {:.3} ms of 200 (no fsync)",
        median(append_times).as_secs_f64() * 1e3
    );
    Ok(())
}

/// Lists 1,000 sessions of 1,000 entries (about 1.1 GB): once with no index (every file scanned),
/// then with the index fresh, then after one session grew.
fn listing() -> Result<(), Box<dyn std::error::Error>> {
    use std::io::Write;
    let root = tempfile::tempdir()?;
    let store = strata_session::SessionStore::new(root.path());
    let cwd = "/home/dev/project";
    let dir = store.dir_for_cwd(cwd);
    std::fs::create_dir_all(&dir)?;
    let template_path = root.path().join("template.jsonl");
    workload::generate(&template_path, 1000)?;
    let template = std::fs::read(&template_path)?;
    let body_start = template
        .iter()
        .position(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let mut total = 0u64;
    let mut last_path = None;
    for n in 0..1000 {
        let header = strata_session::new_header(cwd, None);
        let path = dir.join(format!("{n:04}_{}.jsonl", header.id));
        let mut file = std::fs::File::create(&path)?;
        file.write_all(header.to_json_line()?.as_bytes())?;
        file.write_all(b"\n")?;
        file.write_all(&template[body_start..])?;
        total += file.metadata()?.len();
        last_path = Some(path);
    }
    println!("1000 sessions, {:.2} GB", total as f64 / 1e9);
    let start = Instant::now();
    let cold = store.list(cwd)?;
    println!(
        "list, no index (every file scanned once): {:.0} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    let mut warm_times = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let warm = store.list(cwd)?;
        warm_times.push(start.elapsed());
        assert_eq!(warm.len(), cold.len());
    }
    println!(
        "list, index fresh: median {:.1} ms of 5",
        median(warm_times).as_secs_f64() * 1e3
    );
    if let Some(path) = last_path {
        let mut session = Session::open_writable(&path, WriteOptions::default())?.session;
        session.append_session_info("grown")?;
        drop(session);
        let start = Instant::now();
        let listed = store.list(cwd)?;
        println!(
            "list, one session grew: {:.1} ms",
            start.elapsed().as_secs_f64() * 1e3
        );
        assert!(listed.iter().any(|s| s.name.as_deref() == Some("grown")));
    }
    Ok(())
}
