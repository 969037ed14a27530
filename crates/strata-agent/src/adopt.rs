//! Continuing a session another harness started (Pi 1.x) without paying its cache again.
//!
//! Pi 1.x stores its system prompt as sections (`preamble`, `tools`, `rules`, `docs`, `cwd`)
//! and its tool definitions in the session. Were strata to write its own prompt over them, the
//! first request would differ from Pi's last one at the tools chapter and read nothing of the
//! prefix Pi paid to write. So while the session's prompt is another harness's, strata keeps
//! it: the sections stay as the session has them (strata's own sections that carry rules, the
//! permission mode, are added at the end as a patch), and a tool the session already declares
//! under a name strata runs keeps the session's definition. A user who wants strata's prompt
//! asks for it (`--system-prompt` / `--append-system-prompt`, or [`crate::Agent::set_adopt_foreign_prompt`]).

use strata_context::Context;

use crate::prompt::SectionTexts;

/// Every section name strata's own prompt writes.
const STRATA_SECTIONS: &[&str] = &[
    "intro",
    "tools",
    "rules",
    "docs",
    "skills",
    "cwd",
    crate::rules::PERMISSIONS_SECTION,
];

/// Sections strata adds even to an adopted prompt: they carry rules the core enforces.
const ALWAYS_STRATA: &[&str] = &[crate::rules::PERMISSIONS_SECTION];

/// Whether the session's prompt (at its leaf) is another harness's: a section with text under
/// a name strata never writes.
pub fn is_foreign(context: &Context) -> bool {
    context
        .system
        .folded()
        .iter()
        .any(|(name, text)| !text.is_empty() && !STRATA_SECTIONS.contains(&name.as_str()))
}

/// Whose shapes requests take for this context: Pi's when the prompt kept is Pi's (`adopting`
/// and `is_foreign`: only Pi 1.x writes prompt sections strata does not), so the bytes of
/// the prefix Pi wrote repeat and its cache is read; strata's otherwise.
pub fn dialect(context: &Context, adopting: bool) -> strata_provider::Dialect {
    if adopting && is_foreign(context) {
        strata_provider::Dialect::Pi
    } else {
        strata_provider::Dialect::Strata
    }
}

/// The sections to keep for an adopted prompt: the session's as they are, plus strata's
/// rule-carrying sections from `own`.
pub fn kept_sections(context: &Context, own: &SectionTexts) -> SectionTexts {
    let mut kept: SectionTexts = context
        .system
        .folded()
        .into_iter()
        .filter(|(_, text)| !text.is_empty())
        .map(|(name, text)| (name.as_str().to_owned(), text))
        .collect();
    for name in ALWAYS_STRATA {
        if let Some(text) = own.get(*name) {
            kept.insert((*name).to_owned(), text.clone());
        }
    }
    kept
}

/// `tools` with the session's own definition for each tool it already declares live under
/// the same name: the model sees what it saw, strata's implementation runs the call.
pub fn kept_definitions(
    context: &Context,
    tools: Vec<strata_session::ToolDefinition>,
) -> Vec<strata_session::ToolDefinition> {
    tools
        .into_iter()
        .map(|tool| {
            let recorded = context
                .tools
                .live()
                .find(|t| t.name == tool.name)
                .and_then(|t| serde_json::from_value(t.definition.clone()).ok());
            recorded.unwrap_or(tool)
        })
        .collect()
}
