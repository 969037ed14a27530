use pretty_assertions::assert_eq;
use serde_json::json;

use crate::common::{Env, entries, text, wait_for_group_to_die};

/// The first line of the output is the shell's pid, which is its process group id.
fn pgid_of(output_text: &str) -> i32 {
    output_text.lines().next().unwrap().trim().parse().unwrap()
}

#[tokio::test]
async fn runs_in_cwd_and_interleaves_stdout_and_stderr_in_order() {
    let env = Env::new();
    let out = env
        .call(
            "bash",
            json!({"command": "pwd; echo out1; echo err1 >&2; echo out2"}),
        )
        .await;
    assert!(!out.is_error, "{}", text(&out));
    let cwd = std::fs::canonicalize(env.cwd()).unwrap();
    assert_eq!(text(&out), format!("{}\nout1\nerr1\nout2\n", cwd.display()));
    assert_eq!(out.details["exitCode"], 0);
}

#[tokio::test]
async fn non_zero_exit_is_an_error_result_with_the_code() {
    let env = Env::new();
    let out = env
        .call("bash", json!({"command": "echo oops; exit 3"}))
        .await;
    assert!(out.is_error);
    assert_eq!(text(&out), "oops\n\n\nCommand exited with code 3");
    assert_eq!(out.details["exitCode"], 3);
}

#[tokio::test]
async fn silent_success_says_no_output() {
    let env = Env::new();
    let out = env.call("bash", json!({"command": "true"})).await;
    assert!(!out.is_error);
    assert_eq!(text(&out), "(no output)");
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group() {
    let env = Env::new();
    let out = env
        .call(
            "bash",
            json!({"command": "echo $$; sleep 100 & sleep 100; wait", "timeout": 1}),
        )
        .await;
    assert!(out.is_error);
    let body = text(&out);
    assert!(
        body.ends_with("Command timed out after 1 seconds"),
        "{body}"
    );
    assert_eq!(out.details["timedOut"], true);
    let pgid = pgid_of(&body);
    assert_eq!(wait_for_group_to_die(pgid).await, Vec::<i32>::new());
}

#[tokio::test]
async fn cancel_mid_command_kills_the_group_and_reports_aborted() {
    let env = Env::new();
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let cancel = env.ctx.cancel.clone();
    let run = env.call_with_updates(
        "bash",
        json!({"command": "echo $$; sleep 100 & sleep 100"}),
        Some(sender),
    );
    let watch = async {
        // Cancel once the command has visibly started.
        let first = receiver.recv().await.unwrap();
        cancel.cancel();
        first
    };
    let (out, first_update) = tokio::join!(run, watch);
    assert!(out.is_error);
    let body = text(&out);
    assert!(body.ends_with("Command aborted"), "{body}");
    assert_eq!(out.details["aborted"], true);
    let pgid = pgid_of(&text(&first_update));
    assert_eq!(pgid, pgid_of(&body));
    assert_eq!(wait_for_group_to_die(pgid).await, Vec::<i32>::new());
}

#[tokio::test]
async fn dropping_the_call_kills_the_group() {
    let env = Env::new();
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let run = env.call_with_updates(
        "bash",
        json!({"command": "echo $$; sleep 100"}),
        Some(sender),
    );
    let pgid = tokio::select! {
        _ = run => panic!("the command should not finish"),
        update = receiver.recv() => pgid_of(&text(&update.unwrap())),
    };
    assert_eq!(wait_for_group_to_die(pgid).await, Vec::<i32>::new());
}

#[tokio::test]
async fn output_streams_as_updates_before_the_result() {
    let env = Env::new();
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    // The command only goes on once the test has seen its first line as an update.
    let run = env.call_with_updates(
        "bash",
        json!({"command": "echo first; while [ ! -f go ]; do sleep 0.02; done; echo second"}),
        Some(sender),
    );
    let release = async {
        let first = receiver.recv().await.unwrap();
        std::fs::write(env.cwd().join("go"), "").unwrap();
        first
    };
    let (out, first) = tokio::join!(run, release);
    assert_eq!(text(&first), "first\n");
    assert_eq!(text(&out), "first\nsecond\n");
}

#[tokio::test]
async fn long_output_keeps_the_tail_and_saves_everything_to_a_file() {
    let env = Env::new();
    let out = env.call("bash", json!({"command": "seq 1 5000"})).await;
    assert!(!out.is_error);
    let body = text(&out);
    let path = out.details["fullOutputPath"].as_str().unwrap().to_owned();
    // 5000 lines plus the empty one after the final newline; the last 2000 are kept.
    assert!(body.starts_with("3002\n3003\n"), "{}", &body[..40]);
    assert!(
        body.ends_with(&format!(
            "4999\n5000\n\n\n[Showing lines 3002-5001 of 5001. Full output: {path}]"
        )),
        "{}",
        &body[body.len() - 200..]
    );
    let expected: String = (1..=5000).map(|i| format!("{i}\n")).collect();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), expected);
    assert!(std::path::Path::new(&path).starts_with(env.temp_dir()));
    assert_eq!(out.details["truncation"]["truncatedBy"], "lines");
    assert_eq!(out.details["truncation"]["totalLines"], 5001);
}

#[tokio::test]
async fn short_output_leaves_no_temp_file() {
    let env = Env::new();
    let out = env.call("bash", json!({"command": "echo hi"})).await;
    assert!(out.details.get("fullOutputPath").is_none());
    assert_eq!(entries(env.temp_dir()), Vec::<String>::new());
}

#[tokio::test]
async fn background_jobs_do_not_hold_the_result_and_survive_a_normal_exit() {
    let env = Env::new();
    let out = env
        .call("bash", json!({"command": "sleep 30 & echo $!"}))
        .await;
    assert!(!out.is_error);
    let job: i32 = text(&out).trim().parse().unwrap();
    // The result is back while the job still runs: it did not wait for the job.
    assert!(std::path::Path::new(&format!("/proc/{job}")).exists());
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(job),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
}

#[tokio::test]
async fn a_missing_cwd_is_reported() {
    let mut env = Env::new();
    env.ctx.cwd = env.dir.path().join("gone");
    let out = env.call("bash", json!({"command": "true"})).await;
    assert!(out.is_error);
    assert!(text(&out).starts_with("Working directory does not exist"));
}

#[tokio::test]
async fn the_context_default_timeout_applies_when_the_call_gives_none() {
    let mut env = Env::new();
    env.ctx.limits.bash_default_timeout = Some(std::time::Duration::from_millis(300));
    let out = env
        .call("bash", json!({"command": "echo $$; sleep 100"}))
        .await;
    assert!(out.is_error);
    assert!(
        text(&out).ends_with("Command timed out after 0.3 seconds"),
        "{}",
        text(&out)
    );
    assert_eq!(
        wait_for_group_to_die(pgid_of(&text(&out))).await,
        Vec::<i32>::new()
    );
}

#[tokio::test]
async fn a_command_prefix_runs_before_every_command() {
    let env = Env::new();
    let mut tools = strata_tools::ToolSet::new();
    tools.insert(std::sync::Arc::new(
        strata_tools::BashTool::default().command_prefix("GREETING=hello"),
    ));
    let out = tools
        .execute(
            strata_tools::ToolCall::new("c", "bash", json!({"command": "echo $GREETING"})),
            &env.ctx,
            None,
        )
        .await;
    assert_eq!(text(&out), "hello\n");
}

#[tokio::test]
async fn a_single_line_longer_than_the_kept_tail_is_reported_at_its_real_size() {
    let mut env = Env::new();
    env.ctx.limits.max_output_file_bytes = 1024 * 1024;
    let out = env
        .call(
            "bash",
            json!({"command": "head -c 20971520 /dev/zero | tr '\\0' x"}),
        )
        .await;
    let body = text(&out);
    assert!(
        body.contains("of line 1 (line is 20.0MB)"),
        "{}",
        &body[body.len() - 300..]
    );
}

#[tokio::test]
async fn the_full_output_file_is_bounded_and_says_so() {
    let mut env = Env::new();
    env.ctx.limits.max_output_file_bytes = 256 * 1024;
    let out = env.call("bash", json!({"command": "seq 1 1000000"})).await;
    let path = out.details["fullOutputPath"].as_str().unwrap().to_owned();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 256 * 1024);
    let body = text(&out);
    assert!(
        body.ends_with("\n\n[The full-output file holds the first 256.0KB only (its size limit)]"),
        "{}",
        &body[body.len() - 300..]
    );
    assert_eq!(out.details["truncation"]["totalLines"], 1_000_001);
}

#[tokio::test]
async fn dropped_variables_do_not_reach_the_command_unless_allowed() {
    let mut env = Env::new();
    env.ctx.environment = strata_tools::ToolEnvironment::inherit_all().drop_names(["HOME"]);
    let out = env
        .call("bash", json!({"command": "echo ${HOME-unset}"}))
        .await;
    assert_eq!(text(&out), "unset\n");
    env.ctx.environment = env.ctx.environment.clone().allow(["HOME"]);
    let out = env
        .call("bash", json!({"command": "echo ${HOME-unset}"}))
        .await;
    assert_ne!(text(&out), "unset\n");
}

#[tokio::test]
async fn a_group_with_a_background_job_stays_registered_for_the_exit_cleanup() {
    let env = Env::new();
    let out = env
        .call("bash", json!({"command": "echo $$; sleep 30 &"}))
        .await;
    let pgid = pgid_of(&text(&out));
    assert!(strata_tools::processes::live_groups().contains(&pgid));
    let done = env.call("bash", json!({"command": "echo $$"})).await;
    let finished = pgid_of(&text(&done));
    assert!(!strata_tools::processes::live_groups().contains(&finished));
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(pgid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
}

#[test]
fn the_default_timeout_is_ten_minutes() {
    assert_eq!(
        strata_tools::ToolLimits::default().bash_default_timeout,
        Some(std::time::Duration::from_secs(600))
    );
}

#[tokio::test]
async fn a_users_command_runs_like_a_call_and_reports_its_raw_output_and_code() {
    let mut env = Env::new();
    env.ctx.environment = strata_tools::ToolEnvironment::inherit_all().drop_names(["HOME"]);
    let run = strata_tools::BashTool::default()
        .run_command("echo ${HOME-unset}; echo err >&2; exit 4", &env.ctx)
        .await
        .unwrap();
    // The same environment policy as a call; no "(no output)" or exit-code note added.
    assert_eq!(run.output, "unset\nerr");
    assert_eq!(run.exit_code, Some(4));
    assert!(!run.cancelled && !run.timed_out && !run.truncated);
    assert_eq!(run.full_output_path, None);
}

/// The user's command streams its output as text: a character split across writes arrives
/// whole, and the pieces joined are the whole output (rpc's `bash_execution_update`).
#[tokio::test]
async fn a_users_command_streams_whole_characters_that_join_to_the_output() {
    let env = Env::new();
    let mut pieces: Vec<String> = Vec::new();
    let mut collect = |text: &str| pieces.push(text.to_owned());
    // "é" is 0xC3 0xA9: its two bytes are written apart.
    let run = strata_tools::BashTool::default()
        .run_command_streaming(
            "printf 'a\\303'; sleep 0.2; printf '\\251b\\n'",
            &env.ctx,
            Some(&mut collect),
        )
        .await
        .unwrap();
    assert_eq!(run.output, "aéb");
    assert_eq!(pieces.concat(), "aéb\n");
    assert!(pieces.iter().all(|p| !p.contains('\u{fffd}')), "{pieces:?}");
}

/// Cancelling kills the command at once; a long output keeps its tail and saves the whole.
#[tokio::test]
async fn a_users_command_is_cancelled_and_a_long_output_cut_and_saved() {
    let mut env = Env::new();
    let cancel = env.ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let started = std::time::Instant::now();
    let run = strata_tools::BashTool::default()
        .run_command("echo begun; sleep 30", &env.ctx)
        .await
        .unwrap();
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert!(run.cancelled);
    assert_eq!(run.exit_code, None);
    assert_eq!(run.output, "begun");

    env.ctx.cancel = strata_tools::CancellationToken::new();
    let run = strata_tools::BashTool::default()
        .run_command("seq 1 3000", &env.ctx)
        .await
        .unwrap();
    assert!(run.truncated);
    assert!(run.output.ends_with("3000") && !run.output.starts_with("1\n"));
    let whole = std::fs::read_to_string(run.full_output_path.unwrap()).unwrap();
    assert!(whole.starts_with("1\n2\n"));
}

#[test]
fn project_files_respect_gitignore_and_skip_git() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("target")).unwrap();
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    std::fs::write(root.join("src/main.rs"), "").unwrap();
    std::fs::write(root.join("target/out.o"), "").unwrap();
    let files = strata_tools::project_files(root, 100);
    assert_eq!(files, vec![".gitignore", "src/", "src/main.rs"]);
    assert_eq!(strata_tools::project_files(root, 1), vec![".gitignore"]);
}
