//! The configuration loader on arbitrary text and on mutations of a real config file: it
//! never panics, and every failure is an `invalid configuration` message.

use proptest::prelude::*;

use crate::Overrides;
use crate::config::{Sources, load};

/// A full config file, as the README documents it.
const REAL_CONFIG: &str = r#"model = "anthropic/claude-sonnet-4-5:medium"
tools = ["read", "bash", "edit", "write"]
bash_timeout = 600
tool_env_allow = ["GH_TOKEN"]
max_retries = 3

[compaction]
reserve_tokens = 16384
keep_recent_tokens = 20000

[cache]
retention = "auto"
keep_warm = true
keep_warm_margin_secs = 30

[providers.anthropic]
base_url = "http://127.0.0.1:8080"
"#;

fn mutated() -> impl Strategy<Value = String> {
    proptest::collection::vec((any::<usize>(), any::<char>(), 0u8..3), 0..8).prop_map(|edits| {
        let mut text: Vec<char> = REAL_CONFIG.chars().collect();
        for (at, c, kind) in edits {
            if text.is_empty() {
                break;
            }
            let at = at % text.len();
            match kind {
                0 => text[at] = c,
                1 => text.insert(at, c),
                _ => {
                    text.remove(at);
                }
            }
        }
        text.into_iter().collect()
    })
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn loading_any_config_text_never_panics(
        global in prop_oneof![mutated(), ".{0,400}"],
        project in prop_oneof![Just(String::new()), mutated(), ".{0,200}"],
    ) {
        let home = tempfile::tempdir().unwrap();
        let global_dir = home.path().join("strata");
        std::fs::create_dir_all(&global_dir).unwrap();
        std::fs::write(global_dir.join("config.toml"), &global).unwrap();
        let project_dir = home.path().join("project");
        std::fs::create_dir_all(project_dir.join(".strata")).unwrap();
        std::fs::write(project_dir.join(".strata/config.toml"), &project).unwrap();
        let sources = Sources { global_dir: Some(global_dir), project_dir };
        if let Err(error) = load(&sources, &Overrides::default()) {
            prop_assert!(error.to_string().starts_with("invalid configuration"), "{error}");
        }
    }
}

#[test]
fn the_real_config_loads() {
    let home = tempfile::tempdir().unwrap();
    let global_dir = home.path().join("strata");
    std::fs::create_dir_all(&global_dir).unwrap();
    std::fs::write(global_dir.join("config.toml"), REAL_CONFIG).unwrap();
    let sources = Sources {
        global_dir: Some(global_dir),
        project_dir: home.path().to_path_buf(),
    };
    let config = load(&sources, &Overrides::default()).unwrap();
    assert_eq!(config.bash_timeout, 600);
    assert_eq!(config.tool_env_allow, ["GH_TOKEN"]);
}
