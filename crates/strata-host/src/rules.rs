//! The rules layer of a run (strata-permissions): the permission gate built from strata's
//! `[permissions]` sections and Claude Code's `settings.json` files, the OS sandbox bash runs
//! in, and file checkpoints. Built once per [`crate::Setup`] and shared by every agent it
//! builds, so answers given for the session hold across them.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use strata_agent::ToolRules;
use strata_permissions::sandbox::{self, Availability, SandboxConfig, SandboxPolicy};
use strata_permissions::{Gate, Mode, PermissionsConfig, Places};

use crate::config::{Config, Layers, Sources};

/// Who answers the calls the rules say to ask about.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AskPolicy {
    /// The front end serves the runtime's `PermissionRequested` events.
    #[default]
    FrontEnd,
    /// Nobody can be asked (print mode): such calls are refused and the model reads the hint
    /// (how the user can allow them).
    Refuse(String),
    /// Nobody can be asked, and the user allowed them beforehand (`--yes`): they run. Deny
    /// rules and plan's refusals still hold.
    Yes,
}

/// The program that applies the sandbox and then runs the shell: `strata-sandbox`, or the
/// strata binary itself with a leading `__sandbox`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxHelper {
    /// The executable.
    pub program: PathBuf,
    /// Arguments before the policy's (`["__sandbox"]` for the strata binary).
    pub leading_args: Vec<String>,
}

/// What [`build`] made: the rules every agent of the run gets, and what to tell the user.
pub(crate) struct RunRules {
    pub rules: ToolRules,
    /// Everything to say at start: what reading the rules left aside, then the sandbox's
    /// notice.
    pub notices: Vec<String>,
    /// Why bash runs with less than the full sandbox, if it does.
    pub sandbox_notice: Option<String>,
}

/// The gate, sandbox and checkpoints of a run in `cwd`.
pub(crate) fn build(
    layers: &Layers,
    config: &Config,
    sources: &Sources,
    cwd: &Path,
    run: &crate::Overrides,
) -> anyhow::Result<RunRules> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    build_in(home, layers, config, sources, cwd, run)
}

/// [`build`] with `home` as the user's home (`~/.claude/settings.json`, `~/` in rules).
fn build_in(
    home: Option<PathBuf>,
    layers: &Layers,
    config: &Config,
    sources: &Sources,
    cwd: &Path,
    run: &crate::Overrides,
) -> anyhow::Result<RunRules> {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let places = Places {
        home,
        project: canonical(&sources.project_dir),
        cwd: canonical(cwd),
        project_trusted: layers.trust.trusted,
    };
    // Each file's rules apply and name that file (merged, a project's list would replace the
    // user's); the merged section decides the mode, where `STRATA_PERMISSIONS__MODE` counts.
    let mut sections = Vec::new();
    for layer in [&layers.user, &layers.project].into_iter().flatten() {
        if let Some(value) = layer.table.get("permissions") {
            let section: PermissionsConfig = value
                .clone()
                .try_into()
                .map_err(|e: toml::de::Error| anyhow::anyhow!(e.message().to_owned()))
                .with_context(|| format!("{}: [permissions]", layer.path.display()))?;
            sections.push((section, layer.path.display().to_string()));
        }
    }
    let refs: Vec<(&PermissionsConfig, &str)> = sections
        .iter()
        .map(|(section, file)| (section, file.as_str()))
        .collect();
    let mode: Option<Mode> = run.permission_mode.or(config.permissions.mode);
    let policy = strata_permissions::settings::load(&places, &refs, mode)
        .map_err(|e| anyhow::anyhow!("permission rules: {e}"))?;
    let mut notices: Vec<String> = policy.notes().to_vec();
    // "Always for this project" is kept in the project only where its files are read back.
    let gate = Gate::new(policy, layers.trust.trusted.then(|| places.clone()));
    match &run.asks {
        AskPolicy::FrontEnd => {}
        AskPolicy::Refuse(hint) => gate.set_unattended(hint),
        AskPolicy::Yes => gate.set_yes_to_asks(),
    }
    let (sandbox, notice) = sandbox_for(
        &config.permissions.sandbox,
        &places.project,
        run.sandbox_helper.as_ref(),
    );
    Ok(RunRules {
        rules: ToolRules {
            gate: Some(gate),
            sandbox,
            checkpoints: true,
        },
        notices: {
            notices.extend(notice.clone());
            notices
        },
        sandbox_notice: notice,
    })
}

/// For `strata config` and `/context`: the mode and every rule with the file it came from,
/// one line each, then what the bash sandbox does here.
pub fn describe(
    layers: &Layers,
    config: &Config,
    sources: &Sources,
    cwd: &Path,
    run: &crate::Overrides,
) -> anyhow::Result<Vec<String>> {
    let built = build(layers, config, sources, cwd, run)?;
    let mut lines = built
        .rules
        .gate
        .as_ref()
        .map(Gate::describe)
        .unwrap_or_default();
    match (&built.rules.sandbox, &built.sandbox_notice) {
        (Some(sandbox), None) => lines.push(format!("bash sandbox: {}", sandbox.limits)),
        (_, Some(notice)) => lines.push(format!("bash sandbox: {notice}")),
        (None, None) => {}
    }
    lines.extend(
        built
            .notices
            .iter()
            .filter(|n| Some(*n) != built.sandbox_notice.as_ref())
            .map(|n| format!("note: {n}")),
    );
    Ok(lines)
}

/// The sandbox bash runs in, and a notice when bash runs with less than the full sandbox.
fn sandbox_for(
    config: &SandboxConfig,
    project: &Path,
    helper: Option<&SandboxHelper>,
) -> (Option<strata_tools::Sandbox>, Option<String>) {
    if config.enabled == Some(false) {
        return (
            None,
            Some(
                "the bash sandbox is off (permissions.sandbox.enabled = false): bash commands \
                 run unsandboxed, with your full rights to files and network"
                    .to_owned(),
            ),
        );
    }
    let availability = sandbox::probe();
    if availability == Availability::None {
        return (None, Some(availability.describe(config.network)));
    }
    let Some(helper) = helper.cloned().or_else(find_helper) else {
        return (
            None,
            Some(
                "no sandbox helper was found (strata-sandbox beside this program or on PATH): \
                 bash commands run unsandboxed, with your full rights to files and network"
                    .to_owned(),
            ),
        );
    };
    let policy = SandboxPolicy::for_project(project, config);
    let leading: Vec<&str> = helper.leading_args.iter().map(String::as_str).collect();
    let wrapper = sandbox::wrapper(&policy, helper.program, &leading);
    let notice = (availability == Availability::FilesOnly && !config.network)
        .then(|| availability.describe(config.network));
    (Some(wrapper), notice)
}

/// `strata-sandbox` beside the running program, else on `PATH`.
fn find_helper() -> Option<SandboxHelper> {
    let name = "strata-sandbox";
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(name)));
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join(name));
    beside
        .into_iter()
        .chain(on_path)
        .find(|candidate| candidate.is_file())
        .map(|program| SandboxHelper {
            program,
            leading_args: Vec::new(),
        })
}

#[cfg(test)]
mod tests {

    use std::path::Path;

    use strata_permissions::{CallKind, CallView, Mode, Passage, Source, Verdict};

    use super::{AskPolicy, RunRules, build_in};
    use crate::Overrides;
    use crate::config::{Layers, Sources};

    /// A home with Claude Code user settings and strata's config, and a project with both
    /// kinds of project settings.
    fn layout() -> (tempfile::TempDir, tempfile::TempDir) {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let write = |path: &Path, text: &str| {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(
            &home.path().join(".claude/settings.json"),
            r#"{"permissions":{"allow":["Read(~/notes/**)"],"deny":["WebFetch"]}}"#,
        );
        write(
            &home.path().join(".config/strata/config.toml"),
            "[permissions]\nmode = \"ask\"\ndeny = [\"Bash(rm:*)\"]\n",
        );
        write(
            &project.path().join(".claude/settings.json"),
            r#"{"permissions":{"ask":["mcp__github"],"defaultMode":"plan"}}"#,
        );
        write(
            &project.path().join(".strata/config.toml"),
            "[permissions]\nallow = [\"Bash(cargo test:*)\"]\n",
        );
        (home, project)
    }

    fn rules(home: &Path, project: &Path, run: &Overrides) -> RunRules {
        let sources = Sources {
            global_dir: Some(home.join(".config/strata")),
            project_dir: project.to_path_buf(),
        };
        let layers = Layers::read(&sources, run).unwrap();
        let config = layers.config().unwrap();
        build_in(
            Some(home.to_path_buf()),
            &layers,
            &config,
            &sources,
            project,
            run,
        )
        .unwrap()
    }

    fn decide(rules: &RunRules, call: &CallView<'_>) -> (Verdict, Source) {
        let decision = rules.rules.gate.as_ref().unwrap().decide(call);
        (decision.verdict, decision.source)
    }

    #[test]
    fn every_source_applies_in_a_trusted_project_and_names_its_file() {
        let (home, project) = layout();
        let run = Overrides {
            trust: true,
            ..Overrides::default()
        };
        let rules = rules(home.path(), project.path(), &run);
        let gate = rules.rules.gate.as_ref().unwrap();
        // strata's config names the mode, over the project's Claude Code defaultMode.
        assert_eq!(gate.mode(), Mode::Ask);
        let user_config = home.path().join(".config/strata/config.toml");
        let project_config = project.path().join(".strata/config.toml");
        assert_eq!(
            decide(&rules, &CallView::command("bash", "rm -rf x")),
            (
                Verdict::Deny,
                Source::StrataConfig(user_config.display().to_string())
            )
        );
        assert_eq!(
            decide(&rules, &CallView::command("bash", "cargo test -p y")),
            (
                Verdict::Allow,
                Source::StrataConfig(project_config.display().to_string())
            )
        );
        let fetch = CallView {
            url: Some("https://example.com"),
            ..CallView::new("WebFetch", CallKind::Other)
        };
        assert_eq!(
            decide(&rules, &fetch),
            (
                Verdict::Deny,
                Source::ClaudeUser(home.path().join(".claude/settings.json"))
            )
        );
        let mcp = CallView::new("mcp__github__create_issue", CallKind::Other);
        assert_eq!(decide(&rules, &mcp).0, Verdict::Ask);
        let described = gate.describe().join("\n");
        for expected in [
            "Bash(rm:*)",
            "Bash(cargo test:*)",
            "WebFetch",
            "mcp__github",
        ] {
            assert!(described.contains(expected), "{expected}: {described}");
        }
        // Checkpoints are on for every run.
        assert!(rules.rules.checkpoints);
    }

    #[test]
    fn an_untrusted_projects_rules_do_not_apply_and_the_flag_mode_wins() {
        let (home, project) = layout();
        let run = Overrides {
            permission_mode: Some(Mode::Edits),
            ..Overrides::default()
        };
        let sources = Sources {
            global_dir: Some(home.path().join(".config/strata")),
            project_dir: project.path().to_path_buf(),
        };
        let layers = Layers::read(&sources, &run).unwrap();
        assert!(
            layers.ignored.iter().any(|k| k.starts_with("permissions")),
            "{:?}",
            layers.ignored
        );
        let rules = rules(home.path(), project.path(), &run);
        let gate = rules.rules.gate.as_ref().unwrap();
        assert_eq!(gate.mode(), Mode::Edits);
        let described = gate.describe().join("\n");
        assert!(!described.contains("cargo test"), "{described}");
        assert!(!described.contains("mcp__github"), "{described}");
        assert!(described.contains("Bash(rm:*)"), "{described}");
    }

    #[tokio::test]
    async fn print_mode_refuses_asked_calls_with_the_hint_unless_told_yes() {
        let (home, project) = layout();
        let command = CallView::command("bash", "make");
        let refuse = Overrides {
            asks: AskPolicy::Refuse("pass --yes to allow".into()),
            ..Overrides::default()
        };
        let refusing = rules(home.path(), project.path(), &refuse);
        let passage = refusing
            .rules
            .gate
            .as_ref()
            .unwrap()
            .check("c1", &command)
            .await;
        let Passage::Refused(text) = passage else {
            panic!("{passage:?}")
        };
        assert!(text.contains("pass --yes to allow"), "{text}");
        let yes = Overrides {
            asks: AskPolicy::Yes,
            ..Overrides::default()
        };
        let rules = rules(home.path(), project.path(), &yes);
        let gate = rules.rules.gate.as_ref().unwrap();
        assert_eq!(gate.check("c2", &command).await, Passage::Run);
        // Deny rules still hold.
        let denied = gate
            .check("c3", &CallView::command("bash", "rm -rf /"))
            .await;
        assert!(matches!(denied, Passage::Refused(_)), "{denied:?}");
    }

    #[test]
    fn a_sandbox_turned_off_is_said_at_start() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".config/strata")).unwrap();
        std::fs::write(
            home.path().join(".config/strata/config.toml"),
            "[permissions.sandbox]\nenabled = false\n",
        )
        .unwrap();
        let rules = rules(home.path(), project.path(), &Overrides::default());
        assert!(rules.rules.sandbox.is_none());
        assert_eq!(rules.notices.len(), 1, "{:?}", rules.notices);
        assert!(
            rules.notices[0].contains("bash commands run unsandboxed"),
            "{:?}",
            rules.notices
        );
    }

    #[test]
    fn with_a_helper_bash_gets_the_sandbox_where_the_kernel_has_one() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let run = Overrides {
            sandbox_helper: Some(super::SandboxHelper {
                program: "/usr/bin/strata".into(),
                leading_args: vec!["__sandbox".into()],
            }),
            ..Overrides::default()
        };
        let rules = rules(home.path(), project.path(), &run);
        match strata_permissions::sandbox::probe() {
            strata_permissions::sandbox::Availability::None => {
                eprintln!("no Landlock here: checking the notice instead");
                assert!(rules.rules.sandbox.is_none());
                assert!(rules.notices[0].contains("run unsandboxed"));
            }
            _ => {
                let sandbox = rules.rules.sandbox.unwrap();
                assert_eq!(sandbox.program, Path::new("/usr/bin/strata"));
                assert_eq!(sandbox.args[0], "__sandbox");
                let project = std::fs::canonicalize(project.path()).unwrap();
                assert!(
                    sandbox.args.iter().any(|a| Path::new(a) == project),
                    "{:?}",
                    sandbox.args
                );
            }
        }
    }
}
