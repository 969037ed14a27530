//! The Landlock sandbox, through the real helper binary and real programs. Skips (saying so)
//! where the kernel has no Landlock.

use std::path::Path;
use std::process::{Command, Output};

use strata_permissions::sandbox::{Availability, SandboxPolicy, probe};

const HELPER: &str = env!("CARGO_BIN_EXE_strata-sandbox");

fn run(policy: &SandboxPolicy, cwd: &Path, script: &str) -> Output {
    // The layout lives under the system temp dir, so the policy's own temp dir stands in.
    let tmp = &policy.writable[1];
    Command::new(HELPER)
        .env("TMPDIR", tmp)
        .args(policy.helper_args())
        .args(["/bin/bash", "-c", script])
        .current_dir(cwd)
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .unwrap()
}

fn available() -> Option<Availability> {
    let availability = probe();
    if availability == Availability::None {
        eprintln!("SKIPPED: this kernel has no Landlock; the sandbox cannot be tested here");
        return None;
    }
    Some(availability)
}

struct Layout {
    _base: tempfile::TempDir,
    project: std::path::PathBuf,
    outside: std::path::PathBuf,
    secrets: std::path::PathBuf,
}

fn layout() -> Layout {
    let base = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(base.path()).unwrap();
    let project = root.join("project");
    let outside = root.join("outside");
    let secrets = root.join("home/.ssh");
    for dir in [&project, &outside, &secrets, &root.join("tmp")] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(secrets.join("id_ed25519"), "PRIVATE KEY").unwrap();
    std::fs::write(root.join("home/notes.txt"), "readable").unwrap();
    Layout {
        _base: base,
        project,
        outside,
        secrets,
    }
}

fn policy(l: &Layout, network: bool) -> SandboxPolicy {
    SandboxPolicy {
        writable: vec![l.project.clone(), l.project.parent().unwrap().join("tmp")],
        hidden: vec![l.secrets.clone()],
        network,
    }
}

#[test]
fn writes_outside_the_project_and_reads_of_secrets_are_refused() {
    if available().is_none() {
        return;
    }
    let l = layout();
    let p = policy(&l, false);
    let out = run(&p, &l.project, "echo hi > inside.txt && cat inside.txt");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hi\n");
    let target = l.outside.join("escaped.txt");
    let out = run(&p, &l.project, &format!("echo x > {}", target.display()));
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Permission denied"),
        "{out:?}"
    );
    assert!(!target.exists(), "the write outside the project happened");
    let out = run(
        &p,
        &l.project,
        &format!("cat {}", l.secrets.join("id_ed25519").display()),
    );
    assert!(!out.status.success(), "{out:?}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("PRIVATE KEY"));
    // Beside the secrets, files stay readable.
    let notes = l.secrets.parent().unwrap().join("notes.txt");
    let out = run(&p, &l.project, &format!("cat {}", notes.display()));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "readable", "{out:?}");
}

#[test]
fn tcp_connections_are_refused_unless_the_network_is_allowed() {
    let Some(availability) = available() else {
        return;
    };
    if availability != Availability::Full {
        eprintln!("SKIPPED: this kernel's Landlock (ABI < 4) cannot restrict TCP");
        return;
    }
    let l = layout();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let out = run(&policy(&l, false), &l.project, &script);
    assert!(!out.status.success(), "{out:?}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("connected"));
    let out = run(&policy(&l, true), &l.project, &script);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("connected"));
}

#[test]
fn the_projects_own_build_still_runs() {
    if available().is_none() {
        return;
    }
    let l = layout();
    let p = policy(&l, false);
    let out = run(&p, &l.project, "cargo --version");
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("cargo "));
    std::fs::create_dir_all(l.project.join("src")).unwrap();
    std::fs::write(
        l.project.join("Cargo.toml"),
        "[package]\nname = \"hello\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(
        l.project.join("src/main.rs"),
        "fn main() { println!(\"built\"); }\n",
    )
    .unwrap();
    let out = run(&p, &l.project, "cargo run --offline --quiet");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "built\n");
}

#[test]
fn the_default_policy_hides_the_users_secrets_and_round_trips_through_arguments() {
    let project = tempfile::tempdir().unwrap();
    let p = SandboxPolicy::for_project(project.path(), &Default::default());
    if let Some(home) = std::env::var_os("HOME") {
        let ssh = std::fs::canonicalize(Path::new(&home))
            .unwrap()
            .join(".ssh");
        assert!(p.hidden.contains(&ssh), "{:?}", p.hidden);
    }
    assert!(!p.network);
    let mut args = p.helper_args();
    args.push("true".into());
    let (back, command) = SandboxPolicy::from_helper_args(&args).unwrap();
    assert_eq!(back, p);
    assert_eq!(command, vec![std::ffi::OsString::from("true")]);
}

#[tokio::test]
async fn the_bash_tool_runs_in_the_sandbox_and_tells_the_model_when_refused() {
    use strata_tools::{BashTool, Tool, ToolCall, ToolContext};
    if available().is_none() {
        return;
    }
    let l = layout();
    let p = policy(&l, false);
    let mut ctx = ToolContext::new(&l.project);
    ctx.sandbox = Some(strata_permissions::sandbox::wrapper(&p, HELPER.into(), &[]));
    let target = l.outside.join("x");
    let call = ToolCall::new(
        "c1",
        "bash",
        serde_json::json!({"command": format!("echo hi > {}", target.display())}),
    );
    let out = BashTool::default().execute(call, &ctx, None).await;
    assert!(out.is_error);
    let text = out.text_content();
    assert!(text.contains("Permission denied"), "{text}");
    assert!(text.contains("strata's OS sandbox"), "{text}");
    assert!(!target.exists());
    let call = ToolCall::new(
        "c2",
        "bash",
        serde_json::json!({"command": "echo ok > f && cat f"}),
    );
    let out = BashTool::default().execute(call, &ctx, None).await;
    assert!(!out.is_error, "{}", out.text_content());
}
