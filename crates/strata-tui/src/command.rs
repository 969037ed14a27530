//! Slash commands typed in the editor.

use strata_host::loaded::ExtensionCommand;

/// Every command with a one-line description, in the order `/help` lists them.
pub const COMMANDS: &[(&str, &str)] = &[
    (
        "/model",
        "switch model: /model provider/id, or pick from a list",
    ),
    (
        "/thinking",
        "set the thinking level: off minimal low medium high xhigh",
    ),
    (
        "/compact",
        "summarize older messages: /compact [focus instructions]",
    ),
    (
        "/tree",
        "navigate the session tree (optionally summarizing the branch left)",
    ),
    (
        "/fork",
        "continue in a new session: this branch, or the part before a prompt you pick",
    ),
    ("/new", "start a new session"),
    (
        "/resume",
        "resume a session of this directory (search by name or first message)",
    ),
    ("/name", "name this session: /name text"),
    (
        "/label",
        "label the current entry: /label text (empty clears)",
    ),
    (
        "/tools",
        "enable or disable tools, with what the change costs: /tools +grep -bash",
    ),
    (
        "/mcp",
        "MCP servers: status, tools, reconnect, enable/disable (cost said first)",
    ),
    (
        "/extensions",
        "extensions: source, status, memory slots, hooks and tools",
    ),
    (
        "/hooks",
        "hooks loaded: event, matcher, command, file (and extensions answering)",
    ),
    (
        "/context",
        "the three chapters of the next request: sizes, hashes, breakpoints",
    ),
    (
        "/agents",
        "this session's child agents (task): status, cost; Enter opens one read-only",
    ),
    ("/export", "write the session as HTML: /export [file]"),
    (
        "/share",
        "no hosted sharing: writes the HTML export to share yourself",
    ),
    (
        "/session",
        "this session: file, id, name, messages, tokens, cost",
    ),
    (
        "/copy",
        "copy the last answer to the clipboard (through the terminal)",
    ),
    (
        "/settings",
        "thinking level, theme, auto-compaction (saved in your config)",
    ),
    (
        "/login",
        "store an API key in your config: /login provider key",
    ),
    ("/hotkeys", "list the keys"),
    (
        "/rewind",
        "put the files strata changed back as they were at this entry (move there with /tree)",
    ),
    (
        "/mode",
        "permission mode: /mode plan|ask|edits|auto (Alt+M cycles); alone, the rules",
    ),
    (
        "/trust",
        "trust this project's .strata/ settings (provider rows, prompts, tools) from the next start",
    ),
    ("/help", "list commands and keys"),
    ("/quit", "leave strata"),
];

/// A parsed slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slash {
    /// `/model [name]`.
    Model(Option<String>),
    /// `/thinking [level]`.
    Thinking(Option<String>),
    /// `/compact [instructions]`.
    Compact(Option<String>),
    /// `/tree`.
    Tree,
    /// `/fork`.
    Fork,
    /// `/new`.
    New,
    /// `/resume`.
    Resume,
    /// `/name text`.
    Name(Option<String>),
    /// `/label [text]`.
    Label(Option<String>),
    /// `/tools [+name -name …]`.
    Tools(Vec<ToolToggle>),
    /// `/mcp [verb name]`.
    Mcp(Option<String>),
    /// `/extensions`.
    Extensions,
    /// `/hooks`.
    Hooks,
    /// `/context`.
    Context,
    /// `/agents`.
    Agents,
    /// `/export [file]`.
    Export(Option<String>),
    /// `/trust`.
    Trust,
    /// `/share [file]`.
    Share(Option<String>),
    /// `/session`.
    Session,
    /// `/copy`.
    Copy,
    /// `/settings`.
    Settings,
    /// `/login [provider [key]]`.
    Login(Option<String>),
    /// `/hotkeys`.
    Hotkeys,
    /// `/mode [plan|ask|edits|auto]`.
    Mode(Option<String>),
    /// `/rewind`.
    Rewind,
    /// `/help`.
    Help,
    /// `/quit`.
    Quit,
}

/// One `+name` / `-name` of `/tools`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolToggle {
    /// The tool.
    pub name: String,
    /// Enable (`+`) or disable (`-`).
    pub enable: bool,
}

/// Parses `/name args`; an unknown command or bad argument is an error to show.
pub fn parse(text: &str) -> Result<Slash, String> {
    let text = text.trim();
    let (name, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let rest = rest.trim();
    let arg = (!rest.is_empty()).then(|| rest.to_owned());
    Ok(match name {
        "/model" => Slash::Model(arg),
        "/thinking" => Slash::Thinking(arg),
        "/compact" => Slash::Compact(arg),
        "/tree" => Slash::Tree,
        "/fork" => Slash::Fork,
        "/new" => Slash::New,
        "/resume" => Slash::Resume,
        "/name" => Slash::Name(arg),
        "/label" => Slash::Label(arg),
        "/tools" => Slash::Tools(parse_toggles(rest)?),
        "/mcp" => Slash::Mcp(arg),
        "/extensions" => Slash::Extensions,
        "/hooks" => Slash::Hooks,
        "/context" => Slash::Context,
        "/agents" | "/children" => Slash::Agents,
        "/export" => Slash::Export(arg),
        "/trust" => Slash::Trust,
        "/share" => Slash::Share(arg),
        "/session" => Slash::Session,
        "/copy" => Slash::Copy,
        "/settings" => Slash::Settings,
        "/login" => Slash::Login(arg),
        "/hotkeys" => Slash::Hotkeys,
        "/mode" => Slash::Mode(arg),
        "/rewind" => Slash::Rewind,
        "/help" => Slash::Help,
        "/quit" | "/exit" => Slash::Quit,
        _ => return Err(format!("unknown command {name} (try /help)")),
    })
}

fn parse_toggles(rest: &str) -> Result<Vec<ToolToggle>, String> {
    rest.split_whitespace()
        .map(|word| {
            if let Some(name) = word.strip_prefix('+') {
                Ok(ToolToggle {
                    name: name.to_owned(),
                    enable: true,
                })
            } else if let Some(name) = word.strip_prefix('-') {
                Ok(ToolToggle {
                    name: name.to_owned(),
                    enable: false,
                })
            } else {
                Err(format!(
                    "/tools takes +name to enable and -name to disable, not `{word}`"
                ))
            }
        })
        .collect()
}

/// The keys, as `/help` and `/hotkeys` list them.
pub const KEYS: &[&str] = &[
    "Enter        send (while the agent works: steer it after the current tool batch)",
    "Alt+Enter    while the agent works: queue a follow-up for when it is done",
    "Shift+Enter, Ctrl+J, or \\ then Enter: new line",
    "Up / Down    move in the text; at its edge, earlier prompts",
    "Esc          abort the running turn (viewing a child agent: back to this session)",
    "Ctrl+C       abort the running turn (or clear the editor); twice quits",
    "Ctrl+D       quit (editor empty)",
    "Ctrl+P       next model with credentials (Shift+Ctrl+P: previous, where the terminal tells)",
    "Shift+Tab    next thinking level (off … xhigh; off only for a model that does not reason)",
    "Alt+M        next permission mode (auto, edits, ask, plan)",
    "Ctrl+L       choose a model from the list (as /model)",
    "Ctrl+X       copy the last answer (as /copy)",
    "Tab          complete a /command or an @file",
    "@            offer project files (fuzzy, .gitignore respected); Up/Down choose, Tab puts it in",
    "!cmd         run a shell command, its output added to the context (!!cmd: kept out)",
    "Ctrl+O       expand / collapse tool output",
    "Ctrl+T       expand / collapse thinking",
    "PageUp/Down  scroll the transcript",
];

/// Whether `name` (with its slash) is a built-in command: it wins over an extension's.
pub fn is_builtin(name: &str) -> bool {
    // Every built-in parses without arguments; only an unknown name fails.
    parse(name).is_ok()
}

/// `/help`: every command, the running extensions' after the built-ins (`extensions`, those
/// a built-in does not shadow), then the keys.
pub fn help_lines(extensions: &[ExtensionCommand]) -> Vec<String> {
    let mut lines: Vec<String> = all(extensions)
        .iter()
        .map(|(name, what)| format!("{name:<10} {what}"))
        .collect();
    lines.push(String::new());
    lines.extend(KEYS.iter().map(|line| (*line).to_owned()));
    lines
}

/// Every command with its description: the built-ins, then `extensions`' (`(extension NAME)`
/// after the description).
fn all(extensions: &[ExtensionCommand]) -> Vec<(String, String)> {
    COMMANDS
        .iter()
        .map(|(name, what)| ((*name).to_owned(), (*what).to_owned()))
        .chain(extensions.iter().map(|c| {
            let what = format!("{} (extension {})", c.description, c.extension);
            (format!("/{}", c.name), what.trim_start().to_owned())
        }))
        .collect()
}

/// Completes a command name being typed: the only match, or the longest common prefix.
pub fn complete(prefix: &str, extensions: &[ExtensionCommand]) -> Option<String> {
    let commands = all(extensions);
    let matches: Vec<&str> = commands
        .iter()
        .map(|(name, _)| name.as_str())
        .filter(|name| name.starts_with(prefix))
        .collect();
    match matches.as_slice() {
        [] => None,
        [only] => Some(format!("{only} ")),
        [first, ..] => {
            let mut common = first.to_string();
            for other in &matches[1..] {
                while !other.starts_with(&common) {
                    common.pop();
                }
            }
            Some(common)
        }
    }
}

/// Commands whose name starts with what is typed (for the hint line).
pub fn matching(prefix: &str, extensions: &[ExtensionCommand]) -> Vec<(String, String)> {
    let name = prefix.split_whitespace().next().unwrap_or(prefix);
    all(extensions)
        .into_iter()
        .filter(|(command, _)| command.starts_with(name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_with_their_arguments() {
        assert_eq!(
            parse("/compact keep the API notes"),
            Ok(Slash::Compact(Some("keep the API notes".into())))
        );
        assert_eq!(parse("/model"), Ok(Slash::Model(None)));
        assert_eq!(
            parse("/tools +grep -bash"),
            Ok(Slash::Tools(vec![
                ToolToggle {
                    name: "grep".into(),
                    enable: true
                },
                ToolToggle {
                    name: "bash".into(),
                    enable: false
                }
            ]))
        );
        assert!(parse("/tools grep").is_err());
        assert_eq!(parse("/rewind"), Ok(Slash::Rewind));
        assert_eq!(parse("/mode plan"), Ok(Slash::Mode(Some("plan".into()))));
        assert!(parse("/nope").is_err());
    }

    #[test]
    fn completion_extends_to_the_common_prefix() {
        // `/mode` and `/model` share their first letters.
        assert_eq!(complete("/mo", &[]).as_deref(), Some("/mode"));
        assert_eq!(complete("/model", &[]).as_deref(), Some("/model "));
        assert_eq!(complete("/t", &[]).as_deref(), Some("/t"));
        assert_eq!(complete("/th", &[]).as_deref(), Some("/thinking "));
        assert_eq!(complete("/zz", &[]), None);
    }
}
