//! Pi's rpc commands as one typed value: a line is parsed once, into [`Command`], and every
//! handler gets its fields typed. A `type` no variant names is [`Command::Unknown`], answered
//! as Pi 1.6 answers it (`Unknown command: <type>`, under the command's own name).

use serde::Deserialize;
use serde_json::Value;

use super::protocol::Id;

/// How a prompt sent during a run joins it (Pi's `streamingBehavior`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum StreamingBehavior {
    /// Delivered after the running tool batch.
    #[serde(rename = "steer")]
    Steer,
    /// Delivered when the run would end.
    #[serde(rename = "followUp")]
    FollowUp,
}

/// One command line.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Command {
    /// Runs a message (queued with `streamingBehavior` while a run goes on).
    Prompt {
        /// The text.
        message: String,
        /// Pi's `[{type: "image", data, mimeType}]`, checked one by one (errors name the index).
        images: Option<Value>,
        /// Required while a run goes on.
        streaming_behavior: Option<StreamingBehavior>,
    },
    /// A steering message.
    Steer {
        /// The text.
        message: String,
        /// Images, as for `prompt`.
        images: Option<Value>,
    },
    /// A follow-up message.
    FollowUp {
        /// The text.
        message: String,
        /// Images, as for `prompt`.
        images: Option<Value>,
    },
    /// Stops the run (answered once it has stopped).
    Abort,
    /// Drops the queued messages and returns their texts.
    ClearQueue,
    /// Pi's state object.
    GetState,
    /// The context's messages.
    GetMessages,
    /// Counts, tokens and cost.
    GetSessionStats,
    /// Entries after `since` (all without it).
    GetEntries {
        /// An entry id.
        since: Option<String>,
    },
    /// The entry tree.
    GetTree,
    /// The last answer's text.
    GetLastAssistantText,
    /// The user messages a fork may start before.
    GetForkMessages,
    /// Models of providers with a key.
    GetAvailableModels,
    /// Skills, as slash commands.
    GetCommands,
    /// How steering messages are delivered.
    SetSteeringMode {
        /// `all` or `one-at-a-time`.
        mode: String,
    },
    /// How follow-up messages are delivered.
    SetFollowUpMode {
        /// `all` or `one-at-a-time`.
        mode: String,
    },
    /// Runs a shell command; its output reaches the model with the next prompt.
    Bash {
        /// The command line.
        command: String,
        /// Recorded but never sent to the model.
        #[serde(default)]
        exclude_from_context: bool,
    },
    /// Kills the running `bash` command.
    AbortBash,
    /// Refused: retries live in the transport.
    AbortRetry,
    /// Writes the session page.
    ExportHtml {
        /// Where (default: next to the session).
        output_path: Option<String>,
    },
    /// strata's MCP server list.
    GetMcpServers,
    /// strata's extension list: source, status, memory slots, hooks, tools.
    GetExtensions,
    /// strata's hook list: every command hook and the extensions answering hook events.
    GetHooks,
    /// Reconnects one MCP server.
    McpReconnect {
        /// Its name.
        server: Option<String>,
    },
    /// Starts the OAuth sign-in of one MCP server: answered with the authorization URL; the
    /// server reconnects once the browser comes back (`get_mcp_servers` shows it).
    McpLogin {
        /// Its name.
        server: Option<String>,
    },
    /// Forgets the OAuth sign-in of one MCP server: revokes its tokens at the authorization
    /// server where it offers revocation, deletes the token file, and reconnects it, which
    /// withdraws its tools until it is signed in again.
    McpLogout {
        /// Its name.
        server: Option<String>,
        /// Also forget the stored client secret of a confidential client.
        forget_client: Option<bool>,
    },
    /// Turns one MCP server on or off.
    McpSetEnabled {
        /// Its name.
        server: Option<String>,
        /// On or off.
        enabled: Option<bool>,
    },
    /// Summarises the history now.
    Compact {
        /// Focus for the summary.
        custom_instructions: Option<String>,
    },
    /// A new, empty session file.
    NewSession {
        /// `parentSession` of its header.
        parent_session: Option<String>,
    },
    /// Appends to another file.
    SwitchSession {
        /// The file.
        session_path: String,
    },
    /// A new file holding the path before a user message. When the files strata's tools
    /// changed differ from that point, the response's `filesDiffer` lists them (strata's
    /// offer to restore them: `rewind_files`, or `restoreFiles` here).
    Fork {
        /// The user message.
        entry_id: String,
        /// strata's: also restore the files to the fork point.
        restore_files: Option<bool>,
    },
    /// A new file holding the whole current path.
    Clone,
    /// Another model.
    SetModel {
        /// Provider id.
        provider: String,
        /// Model id.
        model_id: String,
    },
    /// The next available model.
    CycleModel,
    /// Another thinking level.
    SetThinkingLevel {
        /// Pi's level name.
        level: String,
    },
    /// The next thinking level.
    CycleThinkingLevel,
    /// Automatic compaction on or off.
    SetAutoCompaction {
        /// On or off.
        enabled: bool,
    },
    /// Transport retries on or off.
    SetAutoRetry {
        /// On or off.
        enabled: bool,
    },
    /// Names the session.
    SetSessionName {
        /// The name.
        name: String,
    },
    /// An answer to an `extension_ui_request` (strata asks permission questions so).
    ExtensionUiResponse {
        /// The request's id.
        id: Option<String>,
        /// The option chosen (`select`) or the text typed (`input`).
        value: Option<String>,
        /// The answer to a `confirm`.
        confirmed: Option<bool>,
        /// The question was dismissed.
        cancelled: Option<bool>,
    },
    /// strata's: puts the files strata's tools changed back as they were at `entryId` (the
    /// current entry when absent); the restore is appended to the session.
    RewindFiles {
        /// The entry whose file state is wanted.
        entry_id: Option<String>,
        /// Only say what would be restored (the response's data); nothing written or recorded.
        dry_run: Option<bool>,
    },
    /// strata's: switches the permission mode (`plan`, `ask`, `edits`, `auto`).
    SetPermissionMode {
        /// The mode.
        mode: String,
    },
    /// A `type` no variant names.
    #[serde(other)]
    Unknown,
}

/// A parsed line: its id, its `type` (the response's `command`) and the command.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Echoed in the response.
    pub id: Id,
    /// The `type` as sent.
    pub kind: String,
    /// The command.
    pub command: Command,
}

/// Why a line is no command: the response's `command` and `error`.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    /// Echoed in the response.
    pub id: Id,
    /// `parse`, or the `type` as sent.
    pub kind: String,
    /// What was wrong.
    pub error: String,
}

/// Parses one line as Pi does: not JSON or no string `type` is a `parse` failure; a known
/// `type` with a bad field fails under its own name; an unknown `type` parses as
/// [`Command::Unknown`].
pub fn parse(line: &str) -> Result<Request, Refused> {
    let value: Value = serde_json::from_str(line).map_err(|error| Refused {
        id: None,
        kind: "parse".to_owned(),
        error: format!("Failed to parse command: {error}"),
    })?;
    let id: Id = value.get("id").cloned();
    let Some(kind) = value.get("type").and_then(Value::as_str).map(str::to_owned) else {
        return Err(Refused {
            id,
            kind: "parse".to_owned(),
            error: "a command needs a string field `type`".to_owned(),
        });
    };
    match serde_json::from_value::<Command>(value) {
        Ok(command) => Ok(Request { id, kind, command }),
        Err(error) => Err(Refused {
            id,
            kind,
            error: error.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_are_camel_case_and_unknown_types_parse_as_unknown() {
        let request =
            parse(r#"{"id":"r1","type":"set_model","provider":"a","modelId":"b"}"#).unwrap();
        assert_eq!(request.id, Some(json!("r1")));
        assert_eq!(
            request.command,
            Command::SetModel {
                provider: "a".to_owned(),
                model_id: "b".to_owned()
            }
        );
        let prompt =
            parse(r#"{"type":"prompt","message":"hi","streamingBehavior":"followUp"}"#).unwrap();
        assert!(matches!(
            prompt.command,
            Command::Prompt {
                streaming_behavior: Some(StreamingBehavior::FollowUp),
                ..
            }
        ));
        let unknown = parse(r#"{"type":"dance","id":7}"#).unwrap();
        assert_eq!(unknown.command, Command::Unknown);
        assert_eq!(unknown.kind, "dance");
    }

    #[test]
    fn a_known_command_with_a_bad_field_fails_under_its_own_name() {
        let refused = parse(r#"{"type":"set_auto_retry","enabled":"yes","id":1}"#).unwrap_err();
        assert_eq!(refused.kind, "set_auto_retry");
        assert_eq!(refused.id, Some(json!(1)));
        assert!(refused.error.contains("enabled") || refused.error.contains("boolean"));
        let typeless = parse(r#""not a command""#).unwrap_err();
        assert_eq!(typeless.kind, "parse");
        let broken = parse("{broken").unwrap_err();
        assert!(broken.error.starts_with("Failed to parse command"));
    }
}
