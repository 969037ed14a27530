//! The system prompt as named sections: intro, tools, rules, docs, skills, cwd.
//!
//! Nothing here changes from one request to the next (no date, no time, no token counts), so
//! the system chapter is byte-stable for as long as the inputs are. A change of inputs (a tool
//! enabled, AGENTS.md edited) changes only the sections it concerns, which the agent stores as
//! a patch.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::resources::{ContextFile, Skill};

/// What the prompt is built from.
#[derive(Debug, Clone, Default)]
pub struct PromptInputs {
    /// The working directory.
    pub cwd: PathBuf,
    /// Name and description of every live tool, in tool-set order.
    pub tools: Vec<(String, String)>,
    /// Project instructions, outermost first.
    pub context_files: Vec<ContextFile>,
    /// Skills the model may load with `read`.
    pub skills: Vec<Skill>,
    /// Replaces the built-in intro (`--system-prompt`).
    pub custom_intro: Option<String>,
    /// Appended to the rules (`--append-system-prompt`).
    pub append: Option<String>,
}

/// Section name → text, for every section that has text.
pub type SectionTexts = BTreeMap<String, String>;

const INTRO: &str = "You are strata, an expert coding agent working in the user's project. \
You read files, run commands, edit code and write new files with the tools below, and you \
answer with what you did and what is left.";

/// Builds every section from `inputs`. Sections without content are absent.
pub fn build_sections(inputs: &PromptInputs) -> SectionTexts {
    let mut sections = SectionTexts::new();
    let intro = inputs.custom_intro.as_deref().unwrap_or(INTRO);
    sections.insert("intro".into(), intro.to_owned());
    if !inputs.tools.is_empty() {
        sections.insert("tools".into(), tools_section(&inputs.tools));
    }
    sections.insert("rules".into(), rules_section(inputs));
    if !inputs.context_files.is_empty() {
        sections.insert("docs".into(), docs_section(&inputs.context_files));
    }
    let can_read = inputs.tools.iter().any(|(name, _)| name == "read");
    if can_read && !inputs.skills.is_empty() {
        sections.insert("skills".into(), skills_section(&inputs.skills));
    }
    sections.insert(
        "cwd".into(),
        format!("Working directory: {}", inputs.cwd.display()),
    );
    sections
}

fn tools_section(tools: &[(String, String)]) -> String {
    let mut out = String::from("Available tools:\n");
    for (name, description) in tools {
        let _ = writeln!(out, "- {name}: {}", first_sentence(description));
    }
    out.pop();
    out
}

/// The first sentence (or line) of a description: the tool array holds the full text.
fn first_sentence(text: &str) -> &str {
    let line = text.lines().next().unwrap_or("");
    match line.find(". ") {
        Some(end) => &line[..=end],
        None => line,
    }
}

fn rules_section(inputs: &PromptInputs) -> String {
    let has = |tool: &str| inputs.tools.iter().any(|(name, _)| name == tool);
    let mut rules: Vec<&str> = Vec::new();
    if has("read") && has("edit") {
        rules.push("Read a file before you edit it; edit with exact text taken from the file.");
    }
    if has("write") {
        rules.push("Use write only for new files or complete rewrites.");
    }
    if has("bash") {
        rules.push("Use bash to search, list files, build and run tests.");
    }
    rules.push("Keep changes small and focused, and check them by running the project's tests.");
    rules.push("Be concise; show file paths when you talk about files.");
    let mut out = String::from("Guidelines:\n");
    for rule in rules {
        let _ = writeln!(out, "- {rule}");
    }
    out.pop();
    if let Some(extra) = &inputs.append {
        let _ = write!(out, "\n\n{extra}");
    }
    out
}

fn docs_section(files: &[ContextFile]) -> String {
    let mut out = String::from("Project instructions:");
    for file in files {
        let _ = write!(
            out,
            "\n\n<doc path=\"{}\">\n{}\n</doc>",
            file.path.display(),
            file.content.trim_end()
        );
    }
    out
}

fn skills_section(skills: &[Skill]) -> String {
    let mut out = String::from(
        "Skills hold instructions for specific tasks. When a task matches a skill's \
description, read its file with the read tool first; resolve relative paths in it against the \
skill's directory.\n<available_skills>",
    );
    for skill in skills {
        let _ = write!(
            out,
            "\n<skill><name>{}</name><description>{}</description><location>{}</location></skill>",
            escape(&skill.name),
            escape(&skill.description),
            escape(&skill.path.display().to_string())
        );
    }
    out.push_str("\n</available_skills>");
    out
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Where skills are looked for: the global config dir's `skills/`, and `.strata/skills` and
/// `.agents/skills` in `cwd` and each ancestor.
pub fn skill_roots(global_dir: Option<&Path>, cwd: &Path) -> Vec<PathBuf> {
    skill_roots_for(global_dir, cwd, true)
}

/// [`skill_roots`], leaving out the project's (`cwd` and its ancestors) unless `project`:
/// an untrusted project's skills are not offered.
pub fn skill_roots_for(global_dir: Option<&Path>, cwd: &Path, project: bool) -> Vec<PathBuf> {
    let mut roots = Vec::new();
    if let Some(global) = global_dir {
        roots.push(global.join("skills"));
    }
    if project {
        roots.extend(project_skill_roots(cwd));
    }
    roots
}

/// The project's skill folders: `.strata/skills` and `.agents/skills` in `cwd` and each
/// ancestor.
pub fn project_skill_roots(cwd: &Path) -> Vec<PathBuf> {
    let mut roots = Vec::new();
    for dir in cwd.ancestors() {
        roots.push(dir.join(".strata/skills"));
        roots.push(dir.join(".agents/skills"));
    }
    roots
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs() -> PromptInputs {
        PromptInputs {
            cwd: PathBuf::from("/work/project"),
            tools: vec![
                (
                    "read".into(),
                    "Read a file. Long files are truncated.".into(),
                ),
                ("edit".into(), "Replace exact text in a file.".into()),
            ],
            ..PromptInputs::default()
        }
    }

    #[test]
    fn sections_are_named_and_free_of_dates() {
        let sections = build_sections(&inputs());
        let names: Vec<&str> = sections.keys().map(String::as_str).collect();
        assert_eq!(names, ["cwd", "intro", "rules", "tools"]);
        assert_eq!(
            sections["tools"],
            "Available tools:\n- read: Read a file.\n- edit: Replace exact text in a file."
        );
        assert_eq!(sections["cwd"], "Working directory: /work/project");
        let all: String = sections.values().cloned().collect();
        assert!(!all.contains("2026") && !all.to_lowercase().contains("date"));
    }

    #[test]
    fn same_inputs_same_bytes_and_a_tool_change_touches_only_tools_and_rules() {
        let before = build_sections(&inputs());
        assert_eq!(before, build_sections(&inputs()));
        let mut changed = inputs();
        changed.tools.push(("write".into(), "Write a file.".into()));
        let after = build_sections(&changed);
        let differing: Vec<&str> = before
            .keys()
            .filter(|k| before.get(*k) != after.get(*k))
            .map(String::as_str)
            .collect();
        assert_eq!(differing, ["rules", "tools"]);
    }

    #[test]
    fn skills_need_read_and_are_listed_by_name_only() {
        let mut with_skills = inputs();
        with_skills.skills = vec![Skill {
            name: "release".into(),
            description: "Cut a release <fast>".into(),
            path: PathBuf::from("/s/release/SKILL.md"),
        }];
        let sections = build_sections(&with_skills);
        assert!(
            sections["skills"].contains(
                "<name>release</name><description>Cut a release &lt;fast&gt;</description>"
            )
        );
        with_skills.tools.retain(|(name, _)| name != "read");
        assert!(!build_sections(&with_skills).contains_key("skills"));
    }
}
