//! One server's OAuth tokens in a file of its own under the user's strata directory: written
//! whole (a temporary file renamed over the old one) with mode 0600, read back only for the
//! URL they were issued for, and a torn or foreign file reported instead of failing. A lock
//! file next to it makes two strata processes refresh one after the other: the fixture's
//! and many real authorization servers rotate refresh tokens, so a second refresh with the
//! spent token would sign the user out.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rmcp::transport::auth::{
    AuthError, CredentialRefreshGuard, CredentialStore, StoredCredentials,
};
use serde::{Deserialize, Serialize};

/// How long a refresh waits for another process's refresh of the same tokens.
pub const REFRESH_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// The file's shape: the server URL the tokens belong to, and what the SDK stores.
#[derive(Serialize, Deserialize)]
struct TokenDocument {
    /// Tokens are sent only to this URL, never to another server of the same name.
    server_url: String,
    credentials: StoredCredentials,
}

/// Where one server's tokens live, as the SDK's credential store.
#[derive(Debug, Clone)]
pub struct TokenFile {
    path: PathBuf,
    server_url: String,
    /// Why the file on disk was not used (torn, not JSON, another URL), once read.
    problem: Arc<Mutex<Option<String>>>,
}

/// What a token file holds, read without the SDK.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenState {
    /// No file: never signed in, or logged out.
    Missing,
    /// Tokens for this server's URL.
    Present,
    /// A file that cannot be used; the text says why (sign in again to replace it).
    Unusable(String),
}

impl TokenFile {
    /// The token file of server `name` (reached at `server_url`) under `dir`.
    pub fn new(dir: &Path, name: &str, server_url: &str) -> Self {
        Self {
            path: dir.join(format!("{name}.json")),
            server_url: server_url.to_owned(),
            problem: Arc::new(Mutex::new(None)),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Why the file was not used at the last read, if it was not.
    pub fn problem(&self) -> Option<String> {
        self.problem.lock().ok().and_then(|problem| problem.clone())
    }

    /// Reads the file: missing, usable, or why not.
    pub fn state(&self) -> TokenState {
        match self.read() {
            Ok(Some(_)) => TokenState::Present,
            Ok(None) => match self.problem() {
                Some(problem) => TokenState::Unusable(problem),
                None => TokenState::Missing,
            },
            Err(error) => TokenState::Unusable(error),
        }
    }

    /// The stored credentials, `None` for a missing or unusable file (a logout revokes what
    /// this finds).
    pub fn credentials(&self) -> Option<StoredCredentials> {
        self.read().ok().flatten()
    }

    /// Deletes the file (a logout); `false` when there was none.
    pub fn remove(&self) -> std::io::Result<bool> {
        // The lock file holds nothing; a refresh running now keeps its open handle.
        let _ = std::fs::remove_file(self.lock_path());
        remove_if_present(&self.path)
    }

    fn lock_path(&self) -> PathBuf {
        self.path.with_extension("lock")
    }

    /// Holds the lock file until dropped, waiting at most [`REFRESH_LOCK_WAIT`] for another
    /// process's refresh to finish.
    fn lock_for_refresh(&self) -> std::io::Result<std::fs::File> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        create_private_dir(dir)?;
        let mut options = std::fs::OpenOptions::new();
        options.create(true).truncate(false).write(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(0o600);
        }
        let file = options.open(self.lock_path())?;
        let deadline = std::time::Instant::now() + REFRESH_LOCK_WAIT;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(file),
                Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(std::io::Error::other(format!(
                        "another strata process has been refreshing these tokens for {} s",
                        REFRESH_LOCK_WAIT.as_secs()
                    )));
                }
                Err(std::fs::TryLockError::Error(error)) => return Err(error),
            }
        }
    }

    fn set_problem(&self, problem: Option<String>) {
        if let Ok(mut slot) = self.problem.lock() {
            *slot = problem;
        }
    }

    /// The stored credentials; `Ok(None)` for a missing or unusable file (the reason kept in
    /// [`TokenFile::problem`]); `Err` only when the file cannot be read at all.
    fn read(&self) -> Result<Option<StoredCredentials>, String> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                self.set_problem(None);
                return Ok(None);
            }
            Err(error) => return Err(format!("cannot read {}: {error}", self.path.display())),
        };
        match serde_json::from_str::<TokenDocument>(&text) {
            Ok(document) if document.server_url == self.server_url => {
                self.set_problem(None);
                Ok(Some(document.credentials))
            }
            Ok(document) => {
                self.set_problem(Some(format!(
                    "{} holds tokens for {}, not {}; sign in again",
                    self.path.display(),
                    document.server_url,
                    self.server_url
                )));
                Ok(None)
            }
            Err(error) => {
                self.set_problem(Some(format!(
                    "{} is not a valid token file (line {}, column {}: {error}); sign in again",
                    self.path.display(),
                    error.line(),
                    error.column()
                )));
                Ok(None)
            }
        }
    }

    fn write(&self, credentials: StoredCredentials) -> std::io::Result<()> {
        let document = TokenDocument {
            server_url: self.server_url.clone(),
            credentials,
        };
        let bytes = serde_json::to_vec_pretty(&document).map_err(std::io::Error::other)?;
        write_private(&self.path, &bytes)?;
        self.set_problem(None);
        Ok(())
    }
}

/// Deletes `path`; `false` when there was none.
pub(super) fn remove_if_present(path: &Path) -> std::io::Result<bool> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(error),
    }
}

/// Writes `bytes` to `path` whole, mode 0600 in a 0700 directory: a temporary file in the
/// same directory, renamed over the old one, so a crash leaves either the old contents or
/// the new, never half of one.
pub(super) fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    create_private_dir(dir)?;
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    set_owner_only(file.path(), 0o600)?;
    file.write_all(bytes)?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|error| error.error)?;
    Ok(())
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(dir)?;
    set_owner_only(dir, 0o700)
}

#[cfg(unix)]
fn set_owner_only(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_owner_only(_path: &Path, _mode: u32) -> std::io::Result<()> {
    Ok(())
}

fn store_error(path: &Path, error: impl std::fmt::Display) -> AuthError {
    AuthError::CredentialStoreError(format!("{}: {error}", path.display()))
}

#[async_trait::async_trait]
impl CredentialStore for TokenFile {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let store = self.clone();
        tokio::task::spawn_blocking(move || store.read())
            .await
            .map_err(|error| store_error(&self.path, error))?
            .map_err(AuthError::CredentialStoreError)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let store = self.clone();
        tokio::task::spawn_blocking(move || store.write(credentials))
            .await
            .map_err(|error| store_error(&self.path, error))?
            .map_err(|error| store_error(&self.path, error))
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.remove()
            .map(|_| ())
            .map_err(|error| store_error(&self.path, error))
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let store = self.clone();
        let file = tokio::task::spawn_blocking(move || store.lock_for_refresh())
            .await
            .map_err(|error| store_error(&self.path, error))?
            .map_err(|error| store_error(&self.lock_path(), error))?;
        // Closing the file releases the lock.
        Ok(Some(CredentialRefreshGuard::new(file)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credentials() -> StoredCredentials {
        StoredCredentials::new("client-1".into(), None, vec!["mcp".into()], Some(7))
    }

    #[tokio::test]
    async fn tokens_are_written_owner_only_and_read_back_for_their_url() {
        let dir = tempfile::tempdir().unwrap();
        let tokens_dir = dir.path().join("mcp-tokens");
        let store = TokenFile::new(&tokens_dir, "docs", "http://127.0.0.1:9/mcp");
        assert_eq!(store.state(), TokenState::Missing);
        store.save(credentials()).await.unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(store.path())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "token file mode {mode:o}");
            let mode = std::fs::metadata(&tokens_dir).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "token dir mode {mode:o}");
        }
        let loaded = store.load().await.unwrap().unwrap();
        assert_eq!(loaded.client_id, "client-1");
        assert_eq!(loaded.granted_scopes, ["mcp"]);
        assert_eq!(store.state(), TokenState::Present);

        // The same name at another URL never gets these tokens.
        let moved = TokenFile::new(&tokens_dir, "docs", "http://127.0.0.1:10/mcp");
        assert!(moved.load().await.unwrap().is_none());
        assert!(
            moved
                .problem()
                .is_some_and(|p| p.contains("holds tokens for http://127.0.0.1:9/mcp")),
            "{:?}",
            moved.problem()
        );

        store.clear().await.unwrap();
        assert_eq!(store.state(), TokenState::Missing);
        assert!(!store.remove().unwrap());
    }

    #[tokio::test]
    async fn refreshes_of_the_same_tokens_take_turns() {
        let dir = tempfile::tempdir().unwrap();
        // Two stores of the same file, as two strata processes have.
        let first = TokenFile::new(dir.path(), "docs", "http://127.0.0.1:9/mcp");
        let second = TokenFile::new(dir.path(), "docs", "http://127.0.0.1:9/mcp");
        let held = first.acquire_refresh_guard().await.unwrap();
        let waiting = tokio::spawn(async move { second.acquire_refresh_guard().await });
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        assert!(
            !waiting.is_finished(),
            "the second refresh waits for the first"
        );
        drop(held);
        let taken = tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .unwrap()
            .unwrap();
        assert!(matches!(taken, Ok(Some(_))));
    }

    #[tokio::test]
    async fn a_torn_token_file_is_reported_not_fatal_and_replaced_by_the_next_sign_in() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenFile::new(dir.path(), "docs", "http://127.0.0.1:9/mcp");
        std::fs::write(
            store.path(),
            "{\"server_url\": \"http://127.0.0.1:9/mcp\", \"cred",
        )
        .unwrap();
        assert!(store.load().await.unwrap().is_none());
        let problem = store.problem().unwrap();
        assert!(
            problem.contains("is not a valid token file (line 1"),
            "{problem}"
        );
        assert!(problem.contains("sign in again"), "{problem}");
        assert!(matches!(store.state(), TokenState::Unusable(p) if p == problem));
        // The torn file stays until a sign-in replaces it.
        assert!(store.path().exists());
        store.save(credentials()).await.unwrap();
        assert!(store.load().await.unwrap().is_some());
        assert_eq!(store.problem(), None);
    }
}
