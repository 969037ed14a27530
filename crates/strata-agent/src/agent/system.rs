//! The system chapter's upkeep: the sections and tool definitions strata wants now, and the
//! snapshot or patch that records a difference at the end of the session.

use serde_json::{Map, Value};
use strata_accounting::{ATTRIBUTION_CUSTOM_TYPE, ATTRIBUTION_FIELD, Attribution};
use strata_session::EntryId;

use super::Agent;
use crate::error::AgentError;
use crate::event::AgentEvent;
use crate::prompt::{PromptInputs, build_sections};
use crate::resources::{context_files, skills};
use crate::system_sync::{SystemUpdate, plan};

impl Agent {
    /// Builds the system sections and tool definitions from disk and the live tool set.
    /// Tools too large to declare ([`Agent::refused_tools`]) are in neither.
    pub fn desired_system(
        &self,
    ) -> (
        crate::prompt::SectionTexts,
        Vec<strata_session::ToolDefinition>,
    ) {
        let (sections, tools, _) = self.desired_system_and_refusals();
        (sections, tools)
    }

    /// [`Agent::desired_system`], with the tools it left out as too large.
    pub(super) fn desired_system_and_refusals(
        &self,
    ) -> (
        crate::prompt::SectionTexts,
        Vec<strata_session::ToolDefinition>,
        Vec<crate::RefusedTool>,
    ) {
        let active = self.active_tools();
        let deferred: std::collections::HashSet<String> = active
            .iter()
            .filter(|tool| tool.defer_loading())
            .map(|tool| tool.name().to_owned())
            .collect();
        let definitions = active.definitions();
        let tools = definitions
            .into_iter()
            .map(|d| {
                let mut extra = Map::new();
                // Recorded with the definition, so the renderer defers it from its first
                // declaration on where the row has tool search (strata-context).
                if deferred.contains(&d.name) {
                    extra.insert(
                        strata_context::DEFER_LOADING_FIELD.to_owned(),
                        Value::Bool(true),
                    );
                }
                strata_session::ToolDefinition {
                    name: d.name,
                    description: d.description,
                    parameters: d.parameters,
                    extra,
                }
            })
            .collect();
        // A definition too large for the window is never declared (and withdrawn if it was).
        let (tools, refused) = crate::tool_share::split(
            tools,
            self.config.model.context_window,
            self.config.compaction.max_tool_share,
        );
        let inputs = PromptInputs {
            cwd: self.config.cwd.clone(),
            // The source's tools stay out of the prompt's list: their definitions are in the
            // tools array, and their coming and going then patches no section.
            tools: self
                .tools
                .definitions()
                .into_iter()
                .filter(|d| !refused.iter().any(|r| r.name == d.name))
                .map(|d| (d.name, d.description))
                .collect(),
            context_files: context_files(self.config.global_dir.as_deref(), &self.config.cwd),
            skills: skills(&crate::prompt::skill_roots_for(
                self.config.global_dir.as_deref(),
                &self.config.cwd,
                self.project_skills,
            )),
            custom_intro: self.config.custom_intro.clone(),
            append: self.config.append_system_prompt.clone(),
        };
        let mut sections = build_sections(&inputs);
        if let Some(gate) = &self.rules.gate
            && let Some(text) = crate::rules::mode_section(gate.mode(), false)
        {
            sections.insert(crate::rules::PERMISSIONS_SECTION.to_owned(), text);
        }
        (sections, tools, refused)
    }

    /// Stores the system snapshot (first time) or a patch (something changed); returns the
    /// entry written, if any.
    pub fn sync_system(&mut self) -> Result<Option<EntryId>, AgentError> {
        let (mut sections, mut tools, refused) = self.desired_system_and_refusals();
        for tool in &refused {
            tracing::warn!("{tool}");
        }
        let adopt = self.adopt_foreign_prompt;
        let context = self.context()?;
        // Another harness's session keeps its prompt and definitions (crate::adopt).
        if adopt && crate::adopt::is_foreign(context) {
            sections = crate::adopt::kept_sections(context, &sections);
            tools = crate::adopt::kept_definitions(context, tools);
        }
        // Back in auto after another mode: auto is stated, so the old mode is not followed.
        let stated = context.system.folded().into_iter().any(|(name, text)| {
            name.as_str() == crate::rules::PERMISSIONS_SECTION && !text.is_empty()
        });
        if stated
            && !sections.contains_key(crate::rules::PERMISSIONS_SECTION)
            && let Some(text) = crate::rules::mode_section(strata_permissions::Mode::Auto, true)
        {
            sections.insert(crate::rules::PERMISSIONS_SECTION.to_owned(), text);
        }
        let update = plan(context, &sections, &tools);
        let Some(SystemUpdate {
            snapshot,
            sections,
            tools_added,
            tools_removed,
        }) = update
        else {
            return Ok(None);
        };
        let section_names = sections.keys().cloned().collect();
        let added_names = tools_added.iter().map(|t| t.name.clone()).collect();
        // An extension's tools are its cache writes: the request that first declares them
        // writes their definitions.
        let write = self.cache_prices().write;
        let attributed: Vec<Attribution> = match &self.tool_source {
            Some(source) => tools_added
                .iter()
                .filter_map(|tool| {
                    let origin = source.origin(&tool.name)?;
                    let definition = serde_json::to_string(tool).unwrap_or_default();
                    Some(Attribution::of(origin, &definition, write))
                })
                .collect(),
            None => Vec::new(),
        };
        let removed = tools_removed.clone();
        // Pi renders sections in the order written: write them in strata's prompt order.
        let mut ordered: Vec<(String, String)> = sections.into_iter().collect();
        ordered.sort_by_cached_key(|(name, _)| strata_context::SectionName::new(name.clone()));
        let message = strata_session::SystemMessage::new(
            ordered.into_iter().map(|(name, text)| (name, Some(text))),
            tools_added,
            tools_removed,
            strata_session::now_unix_millis(),
        );
        let id = self.session.append_system_message(message.clone())?;
        if !attributed.is_empty() {
            let attributed = Attribution::merged(attributed);
            self.session.append_custom(
                ATTRIBUTION_CUSTOM_TYPE,
                Some(serde_json::json!({ ATTRIBUTION_FIELD: Attribution::to_value(&attributed) })),
            )?;
        }
        self.emit(AgentEvent::SystemUpdate {
            entry_id: id.clone(),
            snapshot,
            sections: section_names,
            tools_added: added_names,
            tools_removed: removed,
            tools_refused: refused.iter().map(ToString::to_string).collect(),
            message: Box::new(strata_session::AgentMessage::System(message)),
        });
        Ok(Some(id))
    }
}
