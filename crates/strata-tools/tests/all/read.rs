use pretty_assertions::assert_eq;
use serde_json::json;
use strata_tools::ToolContent;

use crate::common::{Env, text};

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[tokio::test]
async fn reads_a_whole_small_file_without_line_numbers() {
    let env = Env::new();
    env.write("a.txt", "alpha\nbeta\n");
    let out = env.call("read", json!({"path": "a.txt"})).await;
    assert!(!out.is_error);
    assert_eq!(text(&out), "alpha\nbeta");
    assert!(out.details.is_null());
}

#[tokio::test]
async fn offset_and_limit_select_a_window_and_say_how_to_continue() {
    let env = Env::new();
    env.write("a.txt", numbered(10));
    let out = env
        .call("read", json!({"path": "a.txt", "offset": 3, "limit": 2}))
        .await;
    assert_eq!(
        text(&out),
        "line 3\nline 4\n\n[6 more lines in file. Use offset=5 to continue.]"
    );
    let out = env
        .call("read", json!({"path": "a.txt", "offset": 9}))
        .await;
    assert_eq!(text(&out), "line 9\nline 10");
}

#[tokio::test]
async fn offset_past_the_end_is_an_error() {
    let env = Env::new();
    env.write("a.txt", numbered(3));
    let out = env
        .call("read", json!({"path": "a.txt", "offset": 4}))
        .await;
    assert!(out.is_error);
    assert_eq!(text(&out), "Offset 4 is beyond end of file (3 lines total)");
}

#[tokio::test]
async fn long_files_are_cut_at_2000_lines_with_a_continue_note() {
    let env = Env::new();
    env.write("big.txt", numbered(2500));
    let out = env.call("read", json!({"path": "big.txt"})).await;
    assert!(!out.is_error);
    let body = text(&out);
    assert!(body.starts_with("line 1\nline 2\n"));
    assert!(
        body.contains(
            "\nline 2000\n\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]"
        )
    );
    assert!(!body.contains("line 2001"));
    assert_eq!(out.details["truncation"]["truncatedBy"], "lines");
    assert_eq!(out.details["truncation"]["outputLines"], 2000);

    let next = env
        .call("read", json!({"path": "big.txt", "offset": 2001}))
        .await;
    assert!(text(&next).starts_with("line 2001\n"));
    assert!(text(&next).ends_with("line 2500"));
}

#[tokio::test]
async fn wide_files_are_cut_at_50kb_on_a_line_boundary() {
    let env = Env::new();
    let line = "x".repeat(999);
    let content: String = (0..100).map(|_| format!("{line}\n")).collect();
    env.write("wide.txt", &content);
    let out = env.call("read", json!({"path": "wide.txt"})).await;
    let body = text(&out);
    // 51 lines of 1000 bytes (with newline) fit in 51,200 bytes.
    assert!(
        body.ends_with(
            "\n\n[Showing lines 1-51 of 100 (50.0KB limit). Use offset=52 to continue.]"
        ),
        "{}",
        &body[body.len() - 120..]
    );
    assert_eq!(out.details["truncation"]["truncatedBy"], "bytes");
}

#[tokio::test]
async fn a_first_line_over_the_byte_limit_points_to_bash() {
    let env = Env::new();
    env.write("one.txt", "y".repeat(60 * 1024));
    let out = env.call("read", json!({"path": "one.txt"})).await;
    assert!(!out.is_error);
    let body = text(&out);
    assert!(
        body.starts_with("[Line 1 is 60.0KB, exceeds 50.0KB limit. Use bash: sed -n '1p' "),
        "{body}"
    );
    assert!(
        out.details["truncation"]["firstLineExceedsLimit"]
            .as_bool()
            .unwrap()
    );
}

#[tokio::test]
async fn missing_files_and_directories_are_clear_errors() {
    let env = Env::new();
    let out = env.call("read", json!({"path": "nope.txt"})).await;
    assert!(out.is_error);
    assert_eq!(text(&out), "File not found: nope.txt");
    std::fs::create_dir(env.cwd().join("sub")).unwrap();
    let out = env.call("read", json!({"path": "sub"})).await;
    assert!(out.is_error);
    assert!(
        text(&out).starts_with("sub is a directory"),
        "{}",
        text(&out)
    );
}

#[tokio::test]
async fn binary_files_are_refused() {
    let env = Env::new();
    env.write("blob.bin", b"abc\0def");
    let out = env.call("read", json!({"path": "blob.bin"})).await;
    assert!(out.is_error);
    assert!(text(&out).contains("binary file"), "{}", text(&out));
}

#[tokio::test]
async fn images_come_back_as_image_blocks() {
    let env = Env::new();
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDRrest-of-image";
    env.write("pic.dat", png);
    let out = env.call("read", json!({"path": "pic.dat"})).await;
    assert!(!out.is_error);
    assert_eq!(out.content.len(), 2);
    assert_eq!(
        out.content[0],
        ToolContent::text("Read image file [image/png]")
    );
    use base64::Engine;
    let expected = base64::engine::general_purpose::STANDARD.encode(png);
    assert_eq!(
        out.content[1],
        ToolContent::Image {
            media_type: "image/png".into(),
            data: expected
        }
    );
    // Serialized the way Pi stores image blocks.
    let json = serde_json::to_value(&out.content[1]).unwrap();
    assert_eq!(json["type"], "image");
    assert_eq!(json["mimeType"], "image/png");
}

#[tokio::test]
async fn oversized_images_are_described_not_sent() {
    let mut env = Env::new();
    env.ctx.limits.max_image_bytes = 10;
    env.write("big.gif", b"GIF89a0123456789abcdef");
    let out = env.call("read", json!({"path": "big.gif"})).await;
    assert!(!out.is_error);
    assert_eq!(out.content.len(), 1);
    assert!(text(&out).contains("Image omitted"), "{}", text(&out));
}

#[tokio::test]
async fn paths_resolve_against_cwd_and_accept_absolute_and_at_prefixed() {
    let env = Env::new();
    env.write("d/f.txt", "hi");
    let abs = env.cwd().join("d/f.txt");
    for path in ["d/f.txt", "@d/f.txt", abs.to_str().unwrap()] {
        let out = env.call("read", json!({"path": path})).await;
        assert_eq!(text(&out), "hi", "{path}");
    }
}

#[tokio::test]
async fn empty_files_say_so() {
    let env = Env::new();
    env.write("e.txt", "");
    let out = env.call("read", json!({"path": "e.txt"})).await;
    assert!(!out.is_error);
    assert_eq!(text(&out), "(empty file)");
}

#[tokio::test]
async fn a_window_deep_in_a_large_file_is_cut_and_sized_by_the_window() {
    let env = Env::new();
    env.write("big.txt", numbered(200_000));
    let out = env
        .call(
            "read",
            json!({"path": "big.txt", "offset": 150_000, "limit": 3000}),
        )
        .await;
    let body = text(&out);
    assert!(body.starts_with("line 150000\n"));
    assert!(body.ends_with(
        "line 151999\n\n[Showing lines 150000-151999 of 200000. Use offset=152000 to continue.]"
    ));
    assert_eq!(out.details["truncation"]["totalLines"], 3000);
    assert_eq!(out.details["truncation"]["outputLines"], 2000);
}

#[tokio::test]
async fn crlf_text_is_returned_as_stored() {
    let env = Env::new();
    env.write("w.txt", "a\r\nb\r\n");
    let out = env.call("read", json!({"path": "w.txt"})).await;
    assert_eq!(text(&out), "a\r\nb\r");
}

#[tokio::test]
async fn devices_are_refused() {
    let env = Env::new();
    let out = env.call("read", json!({"path": "/dev/zero"})).await;
    assert!(out.is_error);
    assert!(text(&out).contains("not a regular file"), "{}", text(&out));
}
