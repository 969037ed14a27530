//! Settings files: Claude Code's read as they are, trust respected, answers kept.

use strata_permissions::settings::{Places, load, remember_for_project};
use strata_permissions::{CallView, Mode, PermissionsConfig, Source, Verdict};

fn places(home: &std::path::Path, project: &std::path::Path, trusted: bool) -> Places {
    Places {
        home: Some(home.to_path_buf()),
        project: project.to_path_buf(),
        cwd: project.to_path_buf(),
        project_trusted: trusted,
    }
}

#[test]
fn claude_code_settings_files_are_read_unchanged_with_their_sources() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    std::fs::create_dir_all(project.path().join(".claude")).unwrap();
    // A user settings file as Claude Code writes it, other keys included.
    std::fs::write(
        home.path().join(".claude/settings.json"),
        r#"{"model":"opus","permissions":{"allow":["Bash(git diff:*)"],"deny":["Read(~/.ssh/**)"],"defaultMode":"acceptEdits"},"env":{"A":"1"}}"#,
    )
    .unwrap();
    std::fs::write(
        project.path().join(".claude/settings.json"),
        r#"{"permissions":{"deny":["Bash(git diff --stat)"],"ask":["mcp__github"]}}"#,
    )
    .unwrap();
    let trusted = load(&places(home.path(), project.path(), true), &[], None).unwrap();
    assert_eq!(trusted.mode(), Mode::Edits, "defaultMode acceptEdits");
    let d = trusted.decide(&CallView::command("bash", "git diff --stat"));
    assert_eq!(d.verdict, Verdict::Deny);
    assert_eq!(
        d.source,
        Source::ClaudeProject(project.path().join(".claude/settings.json"))
    );
    let d = trusted.decide(&CallView::command("bash", "git diff HEAD"));
    assert_eq!(d.verdict, Verdict::Allow);
    assert_eq!(
        d.source,
        Source::ClaudeUser(home.path().join(".claude/settings.json"))
    );
    let ssh = home.path().join(".ssh/id_rsa");
    let read = CallView::files("read", strata_permissions::CallKind::Read, vec![ssh]);
    assert_eq!(trusted.decide(&read).verdict, Verdict::Deny);
    // An untrusted project's files set nothing.
    let untrusted = load(&places(home.path(), project.path(), false), &[], None).unwrap();
    assert_eq!(
        untrusted
            .decide(&CallView::command("bash", "git diff --stat"))
            .verdict,
        Verdict::Allow
    );
    // strata's config and the flag come first for the mode; its rules name the config.
    let config: PermissionsConfig =
        toml::from_str("mode = \"plan\"\ndeny = [\"bash(curl:*)\"]\n").unwrap();
    let p = load(
        &places(home.path(), project.path(), true),
        &[(&config, "/cfg/config.toml")],
        None,
    )
    .unwrap();
    assert_eq!(p.mode(), Mode::Plan);
    let d = p.decide(&CallView::command("bash", "curl x"));
    assert_eq!(d.source, Source::StrataConfig("/cfg/config.toml".into()));
    let p = load(
        &places(home.path(), project.path(), true),
        &[(&config, "/cfg/config.toml")],
        Some(Mode::Auto),
    )
    .unwrap();
    assert_eq!(p.mode(), Mode::Auto);
    assert!(p.describe().iter().any(|l| l.contains("mcp__github")));
    // Two layers (the user's file, then the project's): both sets of rules apply, each
    // naming its file; the later layer's mode wins.
    let project_config: PermissionsConfig =
        toml::from_str("mode = \"ask\"\nallow = [\"Bash(cargo test:*)\"]\n").unwrap();
    let p = load(
        &places(home.path(), project.path(), true),
        &[
            (&config, "/cfg/config.toml"),
            (&project_config, "/proj/.strata/config.toml"),
        ],
        None,
    )
    .unwrap();
    assert_eq!(p.mode(), Mode::Ask);
    let d = p.decide(&CallView::command("bash", "curl x"));
    assert_eq!(d.source, Source::StrataConfig("/cfg/config.toml".into()));
    let d = p.decide(&CallView::command("bash", "cargo test -p x"));
    assert_eq!(d.verdict, Verdict::Allow);
    assert_eq!(
        d.source,
        Source::StrataConfig("/proj/.strata/config.toml".into())
    );
}

#[test]
fn an_unknown_claude_code_mode_is_noted_and_left_not_fatal() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    std::fs::write(
        home.path().join(".claude/settings.json"),
        r#"{"permissions":{"defaultMode":"delegate","deny":["Bash(rm:*)"]}}"#,
    )
    .unwrap();
    let p = load(&places(home.path(), project.path(), false), &[], None).unwrap();
    assert_eq!(p.mode(), Mode::Auto);
    assert_eq!(p.notes().len(), 1, "{:?}", p.notes());
    assert!(p.notes()[0].contains("`delegate`"), "{:?}", p.notes());
    assert_eq!(
        p.decide(&CallView::command("bash", "rm x")).verdict,
        Verdict::Deny,
        "the file's rules still apply"
    );
}

#[test]
fn a_bad_rule_names_the_file_and_field() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    std::fs::write(
        home.path().join(".claude/settings.json"),
        r#"{"permissions":{"allow":["Bash(ok)","Bash(broken"]}}"#,
    )
    .unwrap();
    let error = load(&places(home.path(), project.path(), true), &[], None)
        .unwrap_err()
        .to_string();
    assert!(error.contains("settings.json"), "{error}");
    assert!(error.contains("permissions.allow[1]"), "{error}");
    std::fs::write(
        home.path().join(".claude/settings.json"),
        "{\"permissions\": 3}",
    )
    .unwrap();
    let error = load(&places(home.path(), project.path(), true), &[], None)
        .unwrap_err()
        .to_string();
    assert!(error.contains("permissions"), "{error}");
}

#[test]
fn project_answers_are_kept_in_claude_codes_shape() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let places = places(home.path(), project.path(), true);
    std::fs::create_dir_all(project.path().join(".strata")).unwrap();
    std::fs::write(places.project_answers(), r#"{"keep":true}"#).unwrap();
    remember_for_project(&places, "Bash(make)").unwrap();
    remember_for_project(&places, "Bash(make)").unwrap();
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(places.project_answers()).unwrap()).unwrap();
    assert_eq!(doc["keep"], true);
    assert_eq!(
        doc["permissions"]["allow"],
        serde_json::json!(["Bash(make)"])
    );
    let p = load(&places, &[], Some(Mode::Ask)).unwrap();
    let d = p.decide(&CallView::command("bash", "make"));
    assert_eq!(d.verdict, Verdict::Allow);
    assert_eq!(d.source, Source::StrataProject(places.project_answers()));
}
