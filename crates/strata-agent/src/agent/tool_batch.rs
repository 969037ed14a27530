//! One batch of tool calls: hooks, then the rules layer, then the tools; results appended in
//! call order.

use serde_json::Value;
use strata_session::ToolCall;
use strata_tools::ToolOutput;
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

use super::{Agent, hooks};
use crate::convert;
use crate::error::AgentError;
use crate::event::AgentEvent;

impl Agent {
    /// Runs a batch of calls (independent ones concurrently) and appends the results in call
    /// order. An abort stops running tools; their results say so.
    pub(super) async fn run_tools(
        &mut self,
        calls: Vec<ToolCall>,
        cancel: &CancellationToken,
    ) -> Result<(), AgentError> {
        // Hooks first: a refused call never starts, a rewritten one starts with its new input.
        let gates = self.hooks_before_tools(&calls).await;
        for (call, gate) in calls.iter().zip(&gates) {
            let arguments = match gate {
                hooks::ToolGate::Run(arguments) => arguments.clone(),
                hooks::ToolGate::Refuse(_) => call.arguments.clone(),
            };
            self.emit(AgentEvent::ToolStart {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments,
            });
        }
        let mut ctx = self.config.tool_settings.context(self.config.cwd.clone());
        ctx.cancel = cancel.clone();
        ctx.caller = Some(self.caller_session());
        ctx.mailbox = self.mailbox.clone();
        let wire_calls: Vec<strata_tools::ToolCall> = calls
            .iter()
            .zip(&gates)
            .filter_map(|(c, gate)| match gate {
                hooks::ToolGate::Run(arguments) => Some(strata_tools::ToolCall::new(
                    c.id.clone(),
                    c.name.clone(),
                    arguments.clone(),
                )),
                hooks::ToolGate::Refuse(_) => None,
            })
            .collect();
        let mut tools = self.active_tools();
        if let Some(source) = &self.tool_source {
            // A tool the source withdrew since it was declared answers with its own error.
            for call in &calls {
                if tools.get(&call.name).is_none()
                    && let Some(tool) = source.resolve(&call.name)
                {
                    tools.insert(tool);
                }
            }
        }
        // The rules layer: refused calls answer with their refusal and do not run.
        let screened = self
            .rules
            .screen(&tools, &wire_calls, &mut ctx, self.session.path())
            .await;
        let (run_calls, positions) = screened.to_run(wire_calls.clone());
        let (updates, mut update_rx) = unbounded_channel::<(usize, ToolOutput)>();
        let events = self.events.clone();
        let ids: Vec<String> = positions
            .iter()
            .map(|&i| wire_calls[i].id.clone())
            .collect();
        let forward = async move {
            while let Some((index, update)) = update_rx.recv().await {
                if let (Some(events), Some(id)) = (&events, ids.get(index)) {
                    let _ = events.send(AgentEvent::ToolUpdate {
                        id: id.clone(),
                        text: update.text_content(),
                        details: update.details,
                    });
                }
            }
        };
        let ran_calls = run_calls.clone();
        let run = tools.run_batch_with_updates(run_calls, &ctx, Some(updates));
        let (outputs, ()) = tokio::join!(run, forward);
        // A command the sandbox refused may run once outside it, if the user says so.
        let outputs = self
            .rules
            .retry_outside_sandbox(&tools, &ran_calls, &ctx, outputs)
            .await;
        // Rules refusals take their call's place, then hook refusals theirs.
        let mut ran = screened.finish(&wire_calls, outputs).into_iter();
        let mut results = Vec::with_capacity(calls.len());
        for gate in gates {
            results.push(match gate {
                hooks::ToolGate::Run(arguments) => (
                    Some(arguments),
                    ran.next()
                        .unwrap_or_else(|| ToolOutput::error("the tool returned no result")),
                ),
                hooks::ToolGate::Refuse(refusal) => (None, refusal),
            });
        }
        for (call, (arguments, output)) in calls.iter().zip(&results) {
            self.emit(AgentEvent::ToolEnd {
                id: call.id.clone(),
                name: call.name.clone(),
                is_error: output.is_error,
            });
            let id = self.append(convert::tool_result(
                call,
                output,
                strata_session::now_unix_millis(),
            ))?;
            // The ingress filter: the full result stays in the file, its rewrite enters the
            // context (before any request reads it).
            if let Some(arguments) = arguments
                && let Some((text, owner)) = self.filter_result(call, arguments, output).await
            {
                self.record_filtered(id, text, &owner)?;
            }
        }
        let ran: Vec<(&ToolCall, &Value, &ToolOutput)> = calls
            .iter()
            .zip(&results)
            .filter_map(|(call, (arguments, output))| {
                arguments
                    .as_ref()
                    .map(|arguments| (call, arguments, output))
            })
            .collect();
        self.hooks_after_tools(&ran).await
    }

    /// The session a tool call runs in: the file, its id, the assistant message holding the
    /// calls (the leaf while they run) and the model.
    fn caller_session(&self) -> strata_tools::CallerSession {
        strata_tools::CallerSession {
            path: self.session.path().to_path_buf(),
            id: self.session.header().id.clone(),
            entry_id: self.session.leaf().map(|id| id.as_str().to_owned()),
            model: self.config.model.qualified_id(),
        }
    }
}
