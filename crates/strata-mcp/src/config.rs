//! Server entries: strata's `[mcp.servers.NAME]` and the `mcpServers` files other clients
//! write (Claude Code's `.mcp.json` and `~/.claude.json`, Pi's `.pi/mcp.json` and
//! `~/.pi/agent/mcp.json`), merged by name with their provenance.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The per-request timeout when an entry gives none (Pi's default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The tool count that used to decide `auto`; `auto` now follows the session's prices
/// ([`crate::exposure`]). Kept for callers that name it.
pub const AUTO_DEFER_THRESHOLD: usize = 20;

/// One server entry as written: the `mcpServers` shape shared by MCP clients, plus strata's
/// tool allow and deny lists.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerSpec {
    /// `stdio`, `http` or `streamable-http`; optional (`command` means stdio, `url` HTTP).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The executable of a stdio server (not a shell command line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Extra environment of a stdio server; values may name `${VARIABLES}`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Working directory of a stdio server (relative to the session's directory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// The endpoint of a streamable HTTP server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Headers sent to an HTTP server; values may name `${VARIABLES}`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// `false` keeps the entry without connecting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Per-request timeout in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// Only these tools (server names; `*` matches any characters); empty allows all.
    #[serde(
        alias = "allowTools",
        alias = "allowedTools",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub allow_tools: Vec<String>,
    /// Never these tools (same patterns); wins over `allow_tools`.
    #[serde(
        alias = "denyTools",
        alias = "disabledTools",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub deny_tools: Vec<String>,
    /// `direct` (declared in every request), `deferred` (found through tool search) or
    /// `auto` (searched when the session's prices make that cheaper, [`crate::exposure`]). Pi's `codemode` reads as
    /// `deferred` and `hidden` as denying every tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exposure: Option<String>,
    /// What the server offers, in a sentence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// OAuth sign-in settings for an authorization server without dynamic registration
    /// (Claude Code's `oauth` shape).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oauth: Option<OAuthSpec>,
}

/// How strata signs in to a server whose authorization server does not offer dynamic client
/// registration: a client registered out of band, and the fixed loopback port registered
/// with it as `http://127.0.0.1:PORT/callback`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct OAuthSpec {
    /// The registered (public) client id.
    #[serde(alias = "clientId", skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The loopback port of the registered redirect (default: an ephemeral port).
    #[serde(alias = "callbackPort", skip_serializing_if = "Option::is_none")]
    pub callback_port: Option<u16>,
    /// Scopes to ask for (default: those the server's metadata names).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// For a confidential client: the environment variable holding its secret (read when
    /// the sign-in, a refresh or a revocation needs it; else the secret stored by
    /// `strata mcp login NAME --client-secret` is used).
    #[serde(alias = "clientSecretEnv", skip_serializing_if = "Option::is_none")]
    pub client_secret_env: Option<String>,
    /// How the confidential client was registered to authenticate: `client_secret_basic` or
    /// `client_secret_post` (default: what the authorization server's metadata lists,
    /// `client_secret_post` first).
    #[serde(
        alias = "tokenEndpointAuthMethod",
        skip_serializing_if = "Option::is_none"
    )]
    pub token_endpoint_auth_method: Option<String>,
    /// A secret written into the entry: refused when the entry is read, never used or
    /// written back (config files get committed).
    #[serde(alias = "clientSecret", skip_serializing)]
    pub client_secret: Option<RefusedSecret>,
}

/// Whatever a config file holds under `oauth.client_secret`, kept only to refuse the entry;
/// it is neither stored nor printed.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct RefusedSecret;

impl std::fmt::Debug for RefusedSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

impl<'de> Deserialize<'de> for RefusedSecret {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(deserializer).map(|_| Self)
    }
}

/// How strata reaches a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio {
        /// The executable.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment, variables expanded.
        env: BTreeMap<String, String>,
        /// Working directory, resolved.
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The URL.
        url: String,
        /// Headers, variables expanded.
        headers: BTreeMap<String, String>,
    },
}

/// How a server's tools reach the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Exposure {
    /// Declared in the request like a built-in tool.
    Direct,
    /// Declared deferred where the provider allows, reached through tool search.
    Deferred,
    /// Searched when carrying its definitions in every request costs more at the session's
    /// prices than the search round trips ([`crate::exposure`]).
    Auto,
}

/// Which file or layer an entry came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// `~/.config/strata/config.toml`.
    StrataUser,
    /// `.strata/config.toml` in the project.
    StrataProject,
    /// Claude Code's `~/.claude.json` (`mcpServers`).
    ClaudeUser,
    /// Claude Code's `.mcp.json` in the project.
    ClaudeProject,
    /// Pi's `~/.pi/agent/mcp.json`.
    PiUser,
    /// Pi's `.pi/mcp.json` in the project.
    PiProject,
    /// Added for this session only (tests, rpc).
    Session,
}

impl SourceKind {
    /// Whether the entry comes from the project directory (read only in a trusted project).
    pub fn is_project(&self) -> bool {
        matches!(
            self,
            Self::StrataProject | Self::ClaudeProject | Self::PiProject
        )
    }
}

/// Where an entry was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Source {
    /// The kind of file.
    pub kind: SourceKind,
    /// The file, when there is one.
    pub path: Option<PathBuf>,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.path {
            Some(path) => write!(f, "{}", path.display()),
            None => write!(f, "{:?}", self.kind),
        }
    }
}

/// A server ready to connect: its name, transport and settings, with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// The server's name (letters, digits, `_`, `-`).
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// Whether to connect.
    pub enabled: bool,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Allowed tool patterns (empty: all).
    pub allow_tools: Vec<String>,
    /// Denied tool patterns.
    pub deny_tools: Vec<String>,
    /// How its tools reach the model.
    pub exposure: Exposure,
    /// What it offers, in a sentence.
    pub description: Option<String>,
    /// Where the entry was read.
    pub source: Source,
    /// The entry as written (for `strata config` and rewriting files).
    pub spec: ServerSpec,
    /// Where OAuth token files live (`<dir>/<name>.json`, under the user's strata
    /// directory); `None`: no sign-in, a server asking for it is reported.
    pub token_dir: Option<PathBuf>,
}

impl ServerConfig {
    /// The token file of an HTTP server when sign-in is on.
    pub fn token_file(&self) -> Option<crate::auth::TokenFile> {
        match (&self.transport, &self.token_dir) {
            (Transport::Http { url, .. }, Some(dir)) => {
                Some(crate::auth::TokenFile::new(dir, &self.name, url))
            }
            _ => None,
        }
    }

    /// Where the secret of the server's confidential OAuth client lives (beside its token
    /// file), when sign-in is on.
    pub fn client_file(&self) -> Option<crate::auth::ClientSecretFile> {
        match (&self.transport, &self.token_dir) {
            (Transport::Http { url, .. }, Some(dir)) => {
                Some(crate::auth::ClientSecretFile::new(dir, &self.name, url))
            }
            _ => None,
        }
    }

    /// Whether the server's tool `tool` passes the allow and deny lists.
    pub fn allows(&self, tool: &str) -> bool {
        let allowed =
            self.allow_tools.is_empty() || self.allow_tools.iter().any(|p| matches(p, tool));
        allowed && !self.deny_tools.iter().any(|p| matches(p, tool))
    }

    /// One line saying how the server is reached.
    pub fn target(&self) -> String {
        match &self.transport {
            Transport::Stdio { command, args, .. } => std::iter::once(command.as_str())
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            Transport::Http { url, .. } => url.clone(),
        }
    }
}

/// Whether `name` matches `pattern`, where `*` matches any run of characters.
pub fn matches(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let mut rest = name;
    for (index, part) in parts.iter().enumerate() {
        if index == 0 {
            let Some(after) = rest.strip_prefix(part) else {
                return false;
            };
            rest = after;
        } else if index == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            let Some(at) = rest.find(part) else {
                return false;
            };
            rest = &rest[at + part.len()..];
        }
    }
    true
}

/// A bad entry or file: reported, skipped, never fatal for the others.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: {message}")]
pub struct ConfigError {
    /// The file or layer.
    pub origin: String,
    /// What is wrong, naming the server and field.
    pub message: String,
}

/// Checks and resolves one entry. `base_dir` resolves a relative `cwd`.
pub fn resolve(
    name: &str,
    spec: &ServerSpec,
    source: Source,
    base_dir: &Path,
) -> Result<ServerConfig, ConfigError> {
    let error = |message: String| ConfigError {
        origin: source.to_string(),
        message,
    };
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(error(format!(
            "invalid server name \"{name}\" (use letters, digits, \"_\" and \"-\")"
        )));
    }
    let kind = spec.kind.as_deref();
    let transport = match (kind, &spec.command, &spec.url) {
        (Some("sse"), _, _) => {
            return Err(error(format!(
                "server \"{name}\": the legacy SSE transport is not supported; use the streamable HTTP URL"
            )));
        }
        (None | Some("http") | Some("streamable-http"), _, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(error(format!(
                    "server \"{name}\": url must be an http or https URL"
                )));
            }
            Transport::Http {
                url: url.clone(),
                headers: expand_all(&spec.headers),
            }
        }
        (None | Some("stdio"), Some(command), _) => Transport::Stdio {
            command: expand_home(command),
            args: spec.args.iter().map(|arg| expand_home(arg)).collect(),
            env: expand_all(&spec.env),
            cwd: spec.cwd.as_ref().map(|cwd| {
                let cwd = PathBuf::from(expand_home(&cwd.to_string_lossy()));
                if cwd.is_absolute() {
                    cwd
                } else {
                    base_dir.join(cwd)
                }
            }),
        },
        (Some(other), _, _) if !matches!(other, "stdio" | "http" | "streamable-http") => {
            return Err(error(format!(
                "server \"{name}\": type must be \"stdio\", \"http\" or \"streamable-http\", not \"{other}\""
            )));
        }
        _ => {
            return Err(error(format!(
                "server \"{name}\" needs either \"command\" (stdio) or \"url\" (streamable HTTP)"
            )));
        }
    };
    let timeout = match spec.timeout {
        None => DEFAULT_TIMEOUT,
        Some(seconds) if seconds > 0.0 && seconds.is_finite() => Duration::from_secs_f64(seconds),
        Some(_) => {
            return Err(error(format!(
                "server \"{name}\": timeout must be a positive number of seconds"
            )));
        }
    };
    let mut deny_tools = spec.deny_tools.clone();
    let exposure = match spec.exposure.as_deref() {
        None | Some("auto") => Exposure::Auto,
        Some("direct") => Exposure::Direct,
        Some("deferred" | "codemode" | "codemode-deferred") => Exposure::Deferred,
        Some("hidden") => {
            deny_tools.push("*".to_owned());
            Exposure::Auto
        }
        Some(other) => {
            return Err(error(format!(
                "server \"{name}\": exposure must be \"auto\", \"direct\" or \"deferred\", not \"{other}\""
            )));
        }
    };
    if let Some(oauth) = &spec.oauth {
        if oauth.client_secret.is_some() {
            return Err(error(format!(
                "server \"{name}\": oauth.client_secret is not read from config files (they get committed); remove it and run `strata mcp login {name} --client-secret`, or name an environment variable with oauth.client_secret_env"
            )));
        }
        if let Some(method) = &oauth.token_endpoint_auth_method
            && crate::auth::ClientAuthMethod::from_name(method).is_none()
        {
            return Err(error(format!(
                "server \"{name}\": oauth.token_endpoint_auth_method must be \"client_secret_basic\" or \"client_secret_post\", not \"{method}\""
            )));
        }
    }
    Ok(ServerConfig {
        name: name.to_owned(),
        transport,
        enabled: spec.enabled.unwrap_or(true),
        timeout,
        allow_tools: spec.allow_tools.clone(),
        deny_tools,
        exposure,
        description: spec.description.clone(),
        source,
        spec: spec.clone(),
        token_dir: None,
    })
}

/// `${NAME}` replaced by the environment variable (empty when unset).
pub fn expand_variables(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) => {
                let name = &after[..end];
                out.push_str(&std::env::var(name).unwrap_or_default());
                rest = &after[end + 1..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

fn expand_all(values: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    values
        .iter()
        .map(|(key, value)| (key.clone(), expand_variables(value)))
        .collect()
}

fn expand_home(value: &str) -> String {
    match (value.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest).to_string_lossy().into_owned(),
        _ => value.to_owned(),
    }
}

/// The `mcpServers` object of a JSON file, in file order; a missing file is empty.
pub fn read_json_file(path: &Path) -> Result<Vec<(String, ServerSpec)>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => {
            return Err(ConfigError {
                origin: path.display().to_string(),
                message: format!("cannot read: {error}"),
            });
        }
    };
    parse_json(&text).map_err(|message| ConfigError {
        origin: path.display().to_string(),
        message,
    })
}

/// The `mcpServers` entries of a JSON document, in document order.
pub fn parse_json(text: &str) -> Result<Vec<(String, ServerSpec)>, String> {
    let document: Value = serde_json::from_str(text)
        .map_err(|error| format!("not JSON (line {}): {error}", error.line()))?;
    let Some(servers) = document.get("mcpServers") else {
        return Ok(Vec::new());
    };
    let Some(servers) = servers.as_object() else {
        return Err("\"mcpServers\" must be an object".to_owned());
    };
    let mut out = Vec::new();
    for (name, entry) in servers {
        let spec: ServerSpec = serde_json::from_value(entry.clone())
            .map_err(|error| format!("server \"{name}\": {error}"))?;
        out.push((name.clone(), spec));
    }
    Ok(out)
}

/// The files and layers to read, lowest precedence first.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    /// The home directory (`~/.claude.json`, `~/.pi/agent/mcp.json`).
    pub home: Option<PathBuf>,
    /// The project directory (`.mcp.json`, `.pi/mcp.json`); also resolves relative `cwd`s.
    pub project_dir: PathBuf,
    /// Whether project files may be read (project trust).
    pub project_trusted: bool,
    /// strata's user-level `[mcp.servers]`, with the file it came from.
    pub strata_user: Vec<(String, ServerSpec)>,
    /// strata's project-level `[mcp.servers]`.
    pub strata_project: Vec<(String, ServerSpec)>,
    /// The strata user config file, for provenance.
    pub strata_user_path: Option<PathBuf>,
    /// The strata project config file, for provenance.
    pub strata_project_path: Option<PathBuf>,
    /// Where sign-in tokens live (under the user's strata directory, never the project's);
    /// set on every server found.
    pub token_dir: Option<PathBuf>,
}

/// Every server from every layer (a later layer's entry of the same name replaces an
/// earlier one; an entry with neither `command`, `url` nor `type` only overrides `enabled`,
/// `exposure`, `timeout` and the tool lists), in first-declared order, with the errors found.
#[derive(Debug, Clone, Default)]
pub struct Discovered {
    /// The servers, in the order their names were first declared.
    pub servers: Vec<ServerConfig>,
    /// Bad files and entries (each skipped).
    pub errors: Vec<ConfigError>,
    /// Project files present but not read because the project is not trusted.
    pub untrusted_skipped: Vec<PathBuf>,
}

impl Discovery {
    /// Reads every layer.
    pub fn discover(&self) -> Discovered {
        let mut discovered = Discovered::default();
        let mut entries: Vec<(String, ServerSpec, Source)> = Vec::new();
        let mut layer = |list: Vec<(String, ServerSpec)>, source: Source| {
            for (name, spec) in list {
                merge(&mut entries, name, spec, source.clone());
            }
        };
        let mut files: Vec<(PathBuf, SourceKind)> = Vec::new();
        if let Some(home) = &self.home {
            files.push((home.join(".claude.json"), SourceKind::ClaudeUser));
            files.push((home.join(".pi/agent/mcp.json"), SourceKind::PiUser));
        }
        for (path, kind) in files {
            match read_json_file(&path) {
                Ok(list) => layer(
                    list,
                    Source {
                        kind,
                        path: Some(path),
                    },
                ),
                Err(error) => discovered.errors.push(error),
            }
        }
        layer(
            self.strata_user.clone(),
            Source {
                kind: SourceKind::StrataUser,
                path: self.strata_user_path.clone(),
            },
        );
        let project_files = [
            (
                self.project_dir.join(".mcp.json"),
                SourceKind::ClaudeProject,
            ),
            (self.project_dir.join(".pi/mcp.json"), SourceKind::PiProject),
        ];
        for (path, kind) in project_files {
            if !self.project_trusted {
                if path.exists() {
                    discovered.untrusted_skipped.push(path);
                }
                continue;
            }
            match read_json_file(&path) {
                Ok(list) => layer(
                    list,
                    Source {
                        kind,
                        path: Some(path),
                    },
                ),
                Err(error) => discovered.errors.push(error),
            }
        }
        if self.project_trusted {
            layer(
                self.strata_project.clone(),
                Source {
                    kind: SourceKind::StrataProject,
                    path: self.strata_project_path.clone(),
                },
            );
        }
        for (name, spec, source) in entries {
            match resolve(&name, &spec, source, &self.project_dir) {
                Ok(mut server) => {
                    server.token_dir = self.token_dir.clone();
                    discovered.servers.push(server);
                }
                Err(error) => discovered.errors.push(error),
            }
        }
        discovered
    }
}

fn merge(
    entries: &mut Vec<(String, ServerSpec, Source)>,
    name: String,
    spec: ServerSpec,
    source: Source,
) {
    let is_override = spec.command.is_none() && spec.url.is_none() && spec.kind.is_none();
    match entries.iter_mut().find(|(known, _, _)| *known == name) {
        Some((_, known, known_source)) if is_override => {
            if spec.enabled.is_some() {
                known.enabled = spec.enabled;
            }
            if spec.exposure.is_some() {
                known.exposure = spec.exposure;
            }
            if spec.timeout.is_some() {
                known.timeout = spec.timeout;
            }
            if !spec.allow_tools.is_empty() {
                known.allow_tools = spec.allow_tools;
            }
            if !spec.deny_tools.is_empty() {
                known.deny_tools = spec.deny_tools;
            }
            *known_source = source;
        }
        Some(slot) => {
            slot.1 = spec;
            slot.2 = source;
        }
        None => entries.push((name, spec, source)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_with_stars() {
        assert!(matches("get_*", "get_sum"));
        assert!(!matches("get_*", "echo"));
        assert!(matches("*", "anything"));
        assert!(matches("a*c*e", "abcde"));
        assert!(!matches("a*c*e", "abcd"));
        assert!(matches("echo", "echo"));
    }

    #[test]
    fn claude_and_pi_files_parse_in_file_order() {
        let text = r#"{"mcpServers": {
            "zeta": {"command": "npx", "args": ["-y", "server"], "env": {"K": "v"}},
            "alpha": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"A": "b"}}
        }}"#;
        let list = parse_json(text).unwrap();
        assert_eq!(list[0].0, "zeta");
        assert_eq!(list[1].0, "alpha");
        assert_eq!(list[0].1.args, ["-y", "server"]);
        let source = Source {
            kind: SourceKind::ClaudeProject,
            path: None,
        };
        let zeta = resolve(&list[0].0, &list[0].1, source.clone(), Path::new("/p")).unwrap();
        assert!(matches!(zeta.transport, Transport::Stdio { .. }));
        let alpha = resolve(&list[1].0, &list[1].1, source, Path::new("/p")).unwrap();
        assert!(matches!(alpha.transport, Transport::Http { .. }));
    }

    #[test]
    fn bad_entries_name_the_server_and_field() {
        let source = Source {
            kind: SourceKind::PiProject,
            path: Some(PathBuf::from("/p/.pi/mcp.json")),
        };
        let spec = ServerSpec {
            url: Some("http://x/sse".into()),
            kind: Some("sse".into()),
            ..ServerSpec::default()
        };
        let error = resolve("old", &spec, source.clone(), Path::new("/p")).unwrap_err();
        assert!(error.to_string().contains("/p/.pi/mcp.json"), "{error}");
        assert!(error.message.contains("SSE"), "{error}");
        let none = resolve(
            "empty",
            &ServerSpec::default(),
            source.clone(),
            Path::new("/p"),
        )
        .unwrap_err();
        assert!(none.message.contains("\"command\""), "{none}");
        let timeout = ServerSpec {
            command: Some("x".into()),
            timeout: Some(-1.0),
            ..ServerSpec::default()
        };
        let error = resolve("t", &timeout, source.clone(), Path::new("/p")).unwrap_err();
        assert!(error.message.contains("timeout"), "{error}");
        let bad_name = resolve("a b", &timeout, source, Path::new("/p")).unwrap_err();
        assert!(
            bad_name.message.contains("invalid server name"),
            "{bad_name}"
        );
    }

    #[test]
    fn allow_and_deny_lists_filter_tools() {
        let spec = ServerSpec {
            command: Some("x".into()),
            allow_tools: vec!["get_*".into(), "echo".into()],
            deny_tools: vec!["get_secret".into()],
            ..ServerSpec::default()
        };
        let source = Source {
            kind: SourceKind::Session,
            path: None,
        };
        let server = resolve("s", &spec, source, Path::new("/")).unwrap();
        assert!(server.allows("echo"));
        assert!(server.allows("get_sum"));
        assert!(!server.allows("get_secret"));
        assert!(!server.allows("add"));
    }

    #[test]
    fn project_files_need_trust_and_overrides_keep_the_rest() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".pi/agent")).unwrap();
        std::fs::write(
            home.path().join(".pi/agent/mcp.json"),
            r#"{"mcpServers": {"tools": {"command": "tools-mcp", "env": {"K": "v"}}}}"#,
        )
        .unwrap();
        std::fs::write(
            project.path().join(".mcp.json"),
            r#"{"mcpServers": {"tools": {"enabled": false}, "local": {"command": "local-mcp"}}}"#,
        )
        .unwrap();
        let mut discovery = Discovery {
            home: Some(home.path().to_owned()),
            project_dir: project.path().to_owned(),
            ..Discovery::default()
        };
        let untrusted = discovery.discover();
        assert_eq!(untrusted.servers.len(), 1);
        assert!(untrusted.servers[0].enabled);
        assert_eq!(
            untrusted.untrusted_skipped,
            [project.path().join(".mcp.json")]
        );
        discovery.project_trusted = true;
        let trusted = discovery.discover();
        let names: Vec<&str> = trusted.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["tools", "local"]);
        assert!(!trusted.servers[0].enabled, "the project turned it off");
        assert_eq!(trusted.servers[0].spec.env.get("K").unwrap(), "v");
        assert_eq!(trusted.servers[0].source.kind, SourceKind::ClaudeProject);
    }

    #[test]
    fn a_client_secret_in_a_config_file_is_refused_and_never_written_back() {
        let spec: ServerSpec = serde_json::from_str(
            r#"{"url": "http://127.0.0.1:9/mcp", "oauth": {"clientId": "c", "clientSecret": "s3cret"}}"#,
        )
        .unwrap();
        assert!(!format!("{spec:?}").contains("s3cret"));
        assert!(!serde_json::to_string(&spec).unwrap().contains("ecret"));
        let source = Source {
            kind: SourceKind::Session,
            path: None,
        };
        let error = resolve("docs", &spec, source.clone(), Path::new("/")).unwrap_err();
        assert!(
            error
                .message
                .contains("oauth.client_secret is not read from config files")
                && error
                    .message
                    .contains("strata mcp login docs --client-secret"),
            "{}",
            error.message
        );
        let spec: ServerSpec = serde_json::from_str(
            r#"{"url": "http://127.0.0.1:9/mcp", "oauth": {"client_id": "c", "client_secret_env": "DOCS_SECRET", "token_endpoint_auth_method": "private_key_jwt"}}"#,
        )
        .unwrap();
        let error = resolve("docs", &spec, source.clone(), Path::new("/")).unwrap_err();
        assert!(
            error
                .message
                .contains("must be \"client_secret_basic\" or \"client_secret_post\""),
            "{}",
            error.message
        );
        let mut spec = spec;
        if let Some(oauth) = spec.oauth.as_mut() {
            oauth.token_endpoint_auth_method = Some("client_secret_basic".into());
        }
        let server = resolve("docs", &spec, source, Path::new("/")).unwrap();
        assert_eq!(
            server
                .spec
                .oauth
                .and_then(|o| o.client_secret_env)
                .as_deref(),
            Some("DOCS_SECRET")
        );
    }

    #[test]
    fn variables_expand() {
        // Setting a variable needs unsafe in edition 2024; PATH is always there.
        let path = std::env::var("PATH").unwrap_or_default();
        assert_eq!(expand_variables("a${PATH}b"), format!("a{path}b"));
        assert_eq!(expand_variables("${STRATA_MCP_UNSET_VARIABLE_X}"), "");
        assert_eq!(expand_variables("no ${close"), "no ${close");
    }
}
