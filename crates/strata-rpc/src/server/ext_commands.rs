//! Extensions' slash commands over rpc, as Pi 1.6 has them: `get_commands` lists each with
//! `source: "extension"`, and a `prompt` whose message is `/name args` for one runs it instead
//! of prompting the model (Pi's `_tryExecuteExtensionCommand`). Pi's command handler shows
//! its output through the extension UI, so the text goes out as an `extension_ui_request`
//! `notify`; a failure is Pi's `extension_error` (`extensionPath: "command:NAME"`). Either
//! way the prompt is answered `{disposition: "handled"}` after it, as Pi's is.

use serde_json::json;
use strata_host::extensions::{UiCall, UiRequest};

use super::{Host, Input, Server};
use crate::commands::{Command, Request};
use crate::protocol::success;

impl<H: Host> Server<H> {
    /// A `prompt` that may name an extension's command: whether it was taken here. The
    /// extensions are started (their commands are known from their handshakes) and the
    /// command run off the loop; a message naming none comes back as
    /// [`Input::NotACommand`] and is prompted then.
    pub(crate) fn try_extension_command(&mut self, request: &Request) -> bool {
        let Command::Prompt { message, .. } = &request.command else {
            return false;
        };
        let Some(loaded) = self.options.loaded.clone() else {
            return false;
        };
        let slash = strata_host::loaded::split_command(message);
        if !loaded.has_extensions() || slash.is_none_or(|(name, _)| name.starts_with("skill:")) {
            return false;
        }
        let (request, inputs, message) = (request.clone(), self.inputs.clone(), message.clone());
        tokio::spawn(async move {
            let Some(result) = loaded.run_command(&message).await else {
                let _ = inputs.send(Input::NotACommand(Box::new(request)));
                return;
            };
            let _ = inputs.send(Input::CommandDone {
                request: Box::new(request),
                result,
            });
        });
        true
    }

    /// An extension's command finished: its text (or why it failed), then the answer.
    pub(crate) fn command_done(
        &mut self,
        request: &Request,
        result: Result<strata_host::loaded::CommandOutput, String>,
    ) {
        match result {
            Ok(output) => self.ask_extension(UiCall {
                extension: output.extension,
                request: UiRequest::Notify {
                    message: output.text,
                    level: "info".to_owned(),
                },
                reply: None,
            }),
            Err(error) => {
                let name = match &request.command {
                    Command::Prompt { message, .. } => strata_host::loaded::split_command(message)
                        .map(|(name, _)| name.to_owned())
                        .unwrap_or_default(),
                    _ => String::new(),
                };
                self.out.send(&json!({
                    "type": "extension_error", "extensionPath": format!("command:{name}"),
                    "event": "command", "error": error,
                }));
            }
        }
        self.out.send(&success(
            &request.id,
            &request.kind,
            Some(json!({"disposition": "handled"})),
        ));
    }

    /// `get_commands`: the skills, then the extensions' commands once they have started
    /// (answered off the loop when they must start first).
    pub(crate) fn get_commands(&mut self, request: Request) {
        let skills = self.commands();
        let loaded = self.options.loaded.clone().unwrap_or_default();
        let out = self.out.clone();
        tokio::spawn(async move {
            loaded.start_extensions().await;
            let mut commands = skills;
            commands.extend(loaded.commands().into_iter().map(|command| {
                json!({
                    "name": command.name, "description": command.description,
                    "source": "extension",
                    "sourceInfo": {"path": format!("extension {}", command.extension),
                        "source": "extension", "scope": "user", "origin": "top-level"},
                })
            }));
            out.send(&success(
                &request.id,
                &request.kind,
                Some(json!({"commands": commands})),
            ));
        });
    }
}
