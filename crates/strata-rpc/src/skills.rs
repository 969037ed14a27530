//! Skills as RPC commands: listed by `get_commands`, expanded from `/skill:name args` in
//! prompts the way Pi expands them.

use std::path::Path;

use serde_json::{Value, json};
use strata_host::config::Skill;

/// The skills visible from `cwd` and the global config dir; the project's own only once the
/// user trusts the project (the same rule the agent's prompt follows).
pub fn find(global_dir: Option<&Path>, cwd: &Path, project_trusted: bool) -> Vec<Skill> {
    strata_host::config::skills(global_dir, cwd, project_trusted)
}

/// `get_commands` entries: `skill:<name>` for each skill.
pub fn commands(found: &[Skill], global_dir: Option<&Path>) -> Vec<Value> {
    found
        .iter()
        .map(|skill| {
            let user = global_dir.is_some_and(|dir| skill.path.starts_with(dir));
            let scope = if user { "user" } else { "project" };
            let path = skill.path.display().to_string();
            let base = skill
                .path
                .parent()
                .map_or_else(String::new, |p| p.display().to_string());
            // `location` and `path` as docs/rpc.md shows them; `sourceInfo` as Pi 0.73 sends.
            json!({
                "name": format!("skill:{}", skill.name),
                "description": skill.description,
                "source": "skill",
                "location": scope,
                "path": path,
                "sourceInfo": {
                    "path": path,
                    "source": "local",
                    "scope": scope,
                    "origin": "top-level",
                    "baseDir": base,
                },
            })
        })
        .collect()
}

/// `/skill:name args` → the skill's body in a `<skill>` block followed by the arguments;
/// any other text (or an unknown or unreadable skill) unchanged.
pub fn expand(text: &str, found: &[Skill]) -> String {
    let Some(rest) = text.strip_prefix("/skill:") else {
        return text.to_owned();
    };
    let (name, args) = rest.split_once(' ').unwrap_or((rest, ""));
    let Some(skill) = found.iter().find(|s| s.name == name) else {
        return text.to_owned();
    };
    let Ok(content) = std::fs::read_to_string(&skill.path) else {
        return text.to_owned();
    };
    let body = strip_front_matter(&content).trim();
    let base = skill
        .path
        .parent()
        .map_or_else(String::new, |p| p.display().to_string());
    let block = format!(
        "<skill name=\"{}\" location=\"{}\">\nReferences are relative to {base}.\n\n{body}\n</skill>",
        skill.name,
        skill.path.display()
    );
    let args = args.trim();
    if args.is_empty() {
        block
    } else {
        format!("{block}\n\n{args}")
    }
}

fn strip_front_matter(content: &str) -> &str {
    let Some(rest) = content.strip_prefix("---") else {
        return content;
    };
    match rest.find("\n---") {
        Some(end) => {
            let after = &rest[end + 4..];
            after.split_once('\n').map_or("", |(_, body)| body)
        }
        None => content,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skill_command_expands_to_its_body_and_arguments() {
        let dir = tempfile::tempdir().unwrap();
        let skill_dir = dir.path().join(".strata/skills/greet");
        std::fs::create_dir_all(&skill_dir).unwrap();
        std::fs::write(
            skill_dir.join("SKILL.md"),
            "---\nname: greet\ndescription: Says hello\n---\nSay hello warmly.\n",
        )
        .unwrap();
        assert!(
            find(None, dir.path(), false).is_empty(),
            "an untrusted project's skill is not offered"
        );
        let found = find(None, dir.path(), true);
        assert_eq!(found.len(), 1);
        let expanded = expand("/skill:greet to Ana", &found);
        assert!(
            expanded.starts_with("<skill name=\"greet\" location=\""),
            "{expanded}"
        );
        assert!(
            expanded.contains("\n\nSay hello warmly.\n</skill>\n\nto Ana"),
            "{expanded}"
        );
        assert_eq!(expand("/skill:nope x", &found), "/skill:nope x");
        assert_eq!(expand("plain", &found), "plain");
        let listed = commands(&found, None);
        assert_eq!(listed[0]["name"], "skill:greet");
        assert_eq!(listed[0]["description"], "Says hello");
        assert_eq!(listed[0]["source"], "skill");
        assert_eq!(listed[0]["location"], "project");
        assert_eq!(listed[0]["sourceInfo"]["scope"], "project");
    }
}
