//! The secret of a confidential OAuth client, kept in a file of its own beside the server's
//! token file (`<name>.client.json`, mode 0600), never in a config file that might be
//! committed.
//!
//! A file of its own rather than a field of the token document: the SDK rewrites the token
//! document on every refresh and clears it when the authorization server changes, and a
//! logout deletes it; the client outlives all three (a logout forgets it only when asked),
//! so nothing that replaces or deletes tokens can drop the secret by accident.
//!
//! Two kinds of client land here: one registered out of band (its id in the server's entry,
//! its secret given to `strata mcp login NAME --client-secret`), and one that dynamic client
//! registration made confidential (the authorization server handed out a secret), which
//! later refreshes and revocations must authenticate with.

use std::path::{Path, PathBuf};

use rmcp::transport::auth::AuthorizationMetadata;
use serde::{Deserialize, Serialize};

use super::store::{remove_if_present, write_private};
use crate::config::ServerConfig;

/// A client secret; its `Debug` prints `***`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ClientSecret(String);

impl ClientSecret {
    /// A secret from its text (surrounding whitespace, a typed newline, dropped); `None`
    /// when nothing is left.
    pub fn new(text: &str) -> Option<Self> {
        let text = text.trim();
        (!text.is_empty()).then(|| Self(text.to_owned()))
    }

    /// The secret itself, for the request that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ClientSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

/// Where a stored client came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientOrigin {
    /// Registered out of band; the secret was given to `strata mcp login --client-secret`.
    Configured,
    /// Made by dynamic client registration at the last sign-in.
    Registered,
}

/// A confidential client: its id and secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredClient {
    /// The client id the secret belongs to.
    pub client_id: String,
    /// The secret.
    pub client_secret: ClientSecret,
    /// Where it came from.
    pub origin: ClientOrigin,
}

#[derive(Serialize, Deserialize)]
struct ClientDocument {
    /// Sent only to this server's authorization server, never another of the same name.
    server_url: String,
    #[serde(flatten)]
    client: StoredClient,
}

/// One server's client-secret file.
#[derive(Debug, Clone)]
pub struct ClientSecretFile {
    path: PathBuf,
    server_url: String,
}

impl ClientSecretFile {
    /// The client file of server `name` (reached at `server_url`) under `dir`.
    pub fn new(dir: &Path, name: &str, server_url: &str) -> Self {
        Self {
            path: dir.join(format!("{name}.client.json")),
            server_url: server_url.to_owned(),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The stored client; `Ok(None)` when there is none for this server's URL; `Err` says
    /// why the file cannot be used.
    pub fn load(&self) -> Result<Option<StoredClient>, String> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(format!("cannot read {}: {error}", self.path.display())),
        };
        let document: ClientDocument = serde_json::from_str(&text).map_err(|error| {
            format!(
                "{} is not a valid client file ({error}); give the secret again with `--client-secret`",
                self.path.display()
            )
        })?;
        Ok((document.server_url == self.server_url).then_some(document.client))
    }

    /// Stores `client` (replacing what was there), mode 0600.
    pub fn save(&self, client: &StoredClient) -> std::io::Result<()> {
        let document = ClientDocument {
            server_url: self.server_url.clone(),
            client: client.clone(),
        };
        let bytes = serde_json::to_vec_pretty(&document).map_err(std::io::Error::other)?;
        write_private(&self.path, &bytes)
    }

    /// Deletes the file; `false` when there was none.
    pub fn remove(&self) -> std::io::Result<bool> {
        remove_if_present(&self.path)
    }
}

/// The secret strata authenticates `server`'s client with, when it is confidential:
/// for a client in the entry, the variable named by `client_secret_env` when that is set,
/// else the stored secret for that client id; without a client in the entry, the secret
/// dynamic registration handed out. `Ok(None)`: a public client. `Err`: the entry asks for
/// a secret that is nowhere (named after the server).
pub fn client_secret_of(server: &ServerConfig) -> Result<Option<StoredClient>, String> {
    let oauth = server.spec.oauth.clone().unwrap_or_default();
    let stored = match server.client_file() {
        Some(file) => file
            .load()
            .map_err(|error| format!("MCP server \"{}\": {error}", server.name))?,
        None => None,
    };
    let Some(client_id) = oauth.client_id else {
        return Ok(stored.filter(|client| client.origin == ClientOrigin::Registered));
    };
    if let Some(variable) = &oauth.client_secret_env
        && let Some(secret) = std::env::var(variable)
            .ok()
            .and_then(|value| ClientSecret::new(&value))
    {
        return Ok(Some(StoredClient {
            client_id,
            client_secret: secret,
            origin: ClientOrigin::Configured,
        }));
    }
    let stored = stored.filter(|client| {
        client.origin == ClientOrigin::Configured && client.client_id == client_id
    });
    match (&oauth.client_secret_env, stored) {
        (_, Some(stored)) => Ok(Some(stored)),
        (Some(variable), None) => Err(format!(
            "MCP server \"{}\": client \"{client_id}\" needs its secret, but the environment variable {variable} (client_secret_env) is not set and none is stored; set it or run `strata mcp login {} --client-secret`",
            server.name, server.name
        )),
        (None, None) => Ok(None),
    }
}

/// How a confidential client authenticates to the token and revocation endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuthMethod {
    /// HTTP Basic with the id and secret.
    Basic,
    /// `client_id` and `client_secret` in the form body.
    Post,
}

impl ClientAuthMethod {
    /// The method's name in OAuth metadata.
    pub fn name(self) -> &'static str {
        match self {
            Self::Basic => "client_secret_basic",
            Self::Post => "client_secret_post",
        }
    }

    /// The method named `name`, if strata speaks it.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "client_secret_basic" => Some(Self::Basic),
            "client_secret_post" => Some(Self::Post),
            _ => None,
        }
    }
}

/// The method for `field` (`token_endpoint_auth_methods_supported` or the revocation one)
/// of `metadata`, unless the entry names the one the client was registered with
/// (`configured`). `client_secret_post` when the server lists it: the official Python SDK's
/// authorization server (and others) wants `client_id` in the body with either method, and
/// the SDK's OAuth client leaves it out with Basic; else `client_secret_basic`, which is
/// also what a server that lists nothing supports (RFC 8414's default).
pub fn auth_method(
    metadata: &AuthorizationMetadata,
    field: &str,
    configured: Option<ClientAuthMethod>,
) -> ClientAuthMethod {
    if let Some(method) = configured {
        return method;
    }
    let listed = metadata
        .additional_fields
        .get(field)
        .and_then(|value| value.as_array())
        .map(|methods| {
            methods
                .iter()
                .filter_map(|m| m.as_str().and_then(ClientAuthMethod::from_name))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    if listed.contains(&ClientAuthMethod::Post) {
        ClientAuthMethod::Post
    } else {
        ClientAuthMethod::Basic
    }
}

/// Makes the SDK's OAuth client use `method` at the token endpoint: it picks the request
/// body only when the metadata lists `client_secret_post` without `client_secret_basic`,
/// so the metadata it is given lists the chosen method alone.
pub fn pin_token_auth_method(metadata: &mut AuthorizationMetadata, method: ClientAuthMethod) {
    metadata.additional_fields.insert(
        "token_endpoint_auth_methods_supported".to_owned(),
        serde_json::json!([method.name()]),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(methods: Option<serde_json::Value>) -> AuthorizationMetadata {
        let mut metadata = AuthorizationMetadata::default();
        if let Some(methods) = methods {
            metadata
                .additional_fields
                .insert("token_endpoint_auth_methods_supported".into(), methods);
        }
        metadata
    }

    #[test]
    fn the_auth_method_follows_the_metadata_unless_the_entry_names_one() {
        let field = "token_endpoint_auth_methods_supported";
        let both = metadata(Some(serde_json::json!([
            "client_secret_basic",
            "client_secret_post"
        ])));
        assert_eq!(auth_method(&both, field, None), ClientAuthMethod::Post);
        let basic = metadata(Some(serde_json::json!(["client_secret_basic", "none"])));
        assert_eq!(auth_method(&basic, field, None), ClientAuthMethod::Basic);
        assert_eq!(
            auth_method(&metadata(None), field, None),
            ClientAuthMethod::Basic
        );
        assert_eq!(
            auth_method(&both, field, Some(ClientAuthMethod::Basic)),
            ClientAuthMethod::Basic
        );
        let mut pinned = both.clone();
        pin_token_auth_method(&mut pinned, ClientAuthMethod::Post);
        assert_eq!(
            pinned.additional_fields[field],
            serde_json::json!(["client_secret_post"])
        );
    }

    #[test]
    fn the_secret_file_is_owner_only_bound_to_its_url_and_never_printed() {
        let dir = tempfile::tempdir().unwrap();
        let file = ClientSecretFile::new(dir.path(), "docs", "http://127.0.0.1:9/mcp");
        assert_eq!(file.load().unwrap(), None);
        let client = StoredClient {
            client_id: "c".into(),
            client_secret: ClientSecret::new(" s3cret\n").unwrap(),
            origin: ClientOrigin::Configured,
        };
        assert_eq!(client.client_secret.expose(), "s3cret");
        assert!(!format!("{client:?}").contains("s3cret"));
        file.save(&client).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(file.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "client file mode {mode:o}");
        }
        assert_eq!(file.load().unwrap(), Some(client));
        let moved = ClientSecretFile::new(dir.path(), "docs", "http://127.0.0.1:10/mcp");
        assert_eq!(moved.load().unwrap(), None);
        std::fs::write(file.path(), "{").unwrap();
        assert!(file.load().unwrap_err().contains("not a valid client file"));
        assert!(file.remove().unwrap());
        assert!(!file.remove().unwrap());
        assert_eq!(ClientSecret::new(" \n"), None);
    }
}
