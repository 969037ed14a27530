//! AWS credentials and region from the standard environment variables and profile files.
//!
//! This is the only module that knows about the environment, and it never reads it itself:
//! [`resolve`] takes a lookup function and the two file contents, so callers (and tests)
//! pass explicit inputs. [`resolve_from_process`] is the one-line wiring for binaries.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use strata_provider::ApiKey;

/// Long-term or session credentials for SigV4.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwsCredentials {
    /// `AWS_ACCESS_KEY_ID` (not secret; appears in the signature's scope).
    pub access_key_id: String,
    /// `AWS_SECRET_ACCESS_KEY`.
    pub secret_access_key: ApiKey,
    /// `AWS_SESSION_TOKEN`, for temporary credentials.
    pub session_token: Option<ApiKey>,
}

/// How requests to Bedrock authenticate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BedrockAuth {
    /// SigV4 with these credentials.
    SigV4(AwsCredentials),
    /// A Bedrock API key (`AWS_BEARER_TOKEN_BEDROCK`), sent as `Authorization: Bearer`.
    Bearer(ApiKey),
}

/// Resolved auth plus the region to sign for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedAws {
    /// Credentials.
    pub auth: BedrockAuth,
    /// Region (`AWS_REGION`, `AWS_DEFAULT_REGION`, the profile's `region`), if any.
    pub region: Option<String>,
}

/// Why no credentials were found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialsError {
    /// Nothing in the environment or the profile files.
    #[error(
        "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_BEARER_TOKEN_BEDROCK, or a profile `{profile}` in {credentials_file}"
    )]
    Missing {
        /// The profile looked up.
        profile: String,
        /// The credentials file looked in.
        credentials_file: String,
    },
    /// A profile file line could not be read.
    #[error("{file}:{line}: {message}")]
    Parse {
        /// File name.
        file: String,
        /// 1-based line.
        line: usize,
        /// What was wrong.
        message: String,
    },
    /// The profile has a key id but no secret (or the reverse).
    #[error("profile `{profile}` in {file} has {present} but not {missing}")]
    Incomplete {
        /// Profile name.
        profile: String,
        /// File name.
        file: String,
        /// The key that is there.
        present: &'static str,
        /// The key that is missing.
        missing: &'static str,
    },
}

/// Contents of `~/.aws/credentials` and `~/.aws/config`, with names for error messages.
#[derive(Debug, Clone, Default)]
pub struct ProfileFiles {
    /// `(path, text)` of the shared credentials file, if it exists.
    pub credentials: Option<(String, String)>,
    /// `(path, text)` of the shared config file, if it exists.
    pub config: Option<(String, String)>,
}

type Sections = BTreeMap<String, BTreeMap<String, String>>;

/// Parses an INI-style AWS profile file into sections of `key = value`.
pub fn parse_profile_file(file: &str, text: &str) -> Result<Sections, CredentialsError> {
    let mut sections = Sections::new();
    let mut current: Option<String> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest
                .strip_suffix(']')
                .ok_or_else(|| CredentialsError::Parse {
                    file: file.to_owned(),
                    line: i + 1,
                    message: format!("section header `{line}` has no closing `]`"),
                })?;
            let name = name.trim().to_owned();
            sections.entry(name.clone()).or_default();
            current = Some(name);
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            // Nested sub-properties (indented lines) belong to keys we do not use.
            if raw.starts_with([' ', '\t']) {
                continue;
            }
            return Err(CredentialsError::Parse {
                file: file.to_owned(),
                line: i + 1,
                message: format!("expected `key = value`, found `{line}`"),
            });
        };
        let Some(section) = &current else {
            return Err(CredentialsError::Parse {
                file: file.to_owned(),
                line: i + 1,
                message: "setting outside of any [section]".into(),
            });
        };
        sections
            .entry(section.clone())
            .or_default()
            .insert(key.trim().to_ascii_lowercase(), value.trim().to_owned());
    }
    Ok(sections)
}

/// Resolves credentials: the bearer token, then environment keys, then the profile
/// (`AWS_PROFILE`, default `default`) from the credentials file and then the config file.
pub fn resolve(
    env: impl Fn(&str) -> Option<String>,
    files: &ProfileFiles,
) -> Result<ResolvedAws, CredentialsError> {
    let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let profile = var("AWS_PROFILE").unwrap_or_else(|| "default".to_owned());
    let config = match &files.config {
        Some((name, text)) => Some((name.as_str(), parse_profile_file(name, text)?)),
        None => None,
    };
    let config_section = config.as_ref().and_then(|(_, s)| {
        let key = if profile == "default" {
            "default".to_owned()
        } else {
            format!("profile {profile}")
        };
        s.get(&key).or_else(|| s.get(&profile))
    });
    let region = var("AWS_REGION")
        .or_else(|| var("AWS_DEFAULT_REGION"))
        .or_else(|| config_section.and_then(|s| s.get("region").cloned()));

    if let Some(token) = var("AWS_BEARER_TOKEN_BEDROCK") {
        return Ok(ResolvedAws {
            auth: BedrockAuth::Bearer(ApiKey::new(token)),
            region,
        });
    }
    if let (Some(id), Some(secret)) = (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
        return Ok(ResolvedAws {
            auth: BedrockAuth::SigV4(AwsCredentials {
                access_key_id: id,
                secret_access_key: ApiKey::new(secret),
                session_token: var("AWS_SESSION_TOKEN").map(ApiKey::new),
            }),
            region,
        });
    }
    let mut candidates: Vec<(&str, &BTreeMap<String, String>)> = Vec::new();
    let credentials = match &files.credentials {
        Some((name, text)) => Some((name.as_str(), parse_profile_file(name, text)?)),
        None => None,
    };
    if let Some(section) = credentials
        .as_ref()
        .and_then(|(name, s)| s.get(&profile).map(|sec| (*name, sec)))
    {
        candidates.push(section);
    }
    if let (Some((name, _)), Some(section)) = (&config, config_section) {
        candidates.push((name, section));
    }
    for (file, section) in candidates {
        let id = section.get("aws_access_key_id");
        let secret = section.get("aws_secret_access_key");
        match (id, secret) {
            (Some(id), Some(secret)) => {
                return Ok(ResolvedAws {
                    auth: BedrockAuth::SigV4(AwsCredentials {
                        access_key_id: id.clone(),
                        secret_access_key: ApiKey::new(secret.clone()),
                        session_token: section.get("aws_session_token").cloned().map(ApiKey::new),
                    }),
                    region,
                });
            }
            (Some(_), None) => {
                return Err(CredentialsError::Incomplete {
                    profile,
                    file: file.to_owned(),
                    present: "aws_access_key_id",
                    missing: "aws_secret_access_key",
                });
            }
            (None, Some(_)) => {
                return Err(CredentialsError::Incomplete {
                    profile,
                    file: file.to_owned(),
                    present: "aws_secret_access_key",
                    missing: "aws_access_key_id",
                });
            }
            (None, None) => {}
        }
    }
    Err(CredentialsError::Missing {
        profile,
        credentials_file: files
            .credentials
            .as_ref()
            .map(|(n, _)| n.clone())
            .unwrap_or_else(|| "~/.aws/credentials".into()),
    })
}

/// Default locations: `AWS_SHARED_CREDENTIALS_FILE` / `AWS_CONFIG_FILE`, else under `~/.aws`.
pub fn profile_paths(
    env: impl Fn(&str) -> Option<String>,
    home: Option<&Path>,
) -> (Option<PathBuf>, Option<PathBuf>) {
    let under_home = |file: &str| home.map(|h| h.join(".aws").join(file));
    (
        env("AWS_SHARED_CREDENTIALS_FILE")
            .map(PathBuf::from)
            .or_else(|| under_home("credentials")),
        env("AWS_CONFIG_FILE")
            .map(PathBuf::from)
            .or_else(|| under_home("config")),
    )
}

/// Reads the profile files at `paths`; a missing file is skipped.
pub fn read_profile_files(paths: (Option<PathBuf>, Option<PathBuf>)) -> ProfileFiles {
    let read = |p: Option<PathBuf>| {
        p.and_then(|p| {
            std::fs::read_to_string(&p)
                .ok()
                .map(|t| (p.display().to_string(), t))
        })
    };
    ProfileFiles {
        credentials: read(paths.0),
        config: read(paths.1),
    }
}

/// Resolves from this process's environment and the user's home directory.
pub fn resolve_from_process() -> Result<ResolvedAws, CredentialsError> {
    let env = |k: &str| std::env::var(k).ok();
    let home = env("HOME")
        .or_else(|| env("USERPROFILE"))
        .map(PathBuf::from);
    let files = read_profile_files(profile_paths(env, home.as_deref()));
    resolve(env, &files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn env_of<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    const CREDENTIALS: &str = "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = secretdefault\n\n[work]\naws_access_key_id=AKIDWORK\naws_secret_access_key=secretwork\naws_session_token=tok\n";
    const CONFIG: &str = "[default]\nregion = eu-west-1\n\n[profile work]\nregion = ap-south-1\ns3 =\n  max_concurrent_requests = 20\n";

    fn files() -> ProfileFiles {
        ProfileFiles {
            credentials: Some(("credentials".into(), CREDENTIALS.into())),
            config: Some(("config".into(), CONFIG.into())),
        }
    }

    #[test]
    fn environment_keys_win_over_profiles() {
        let env = [
            ("AWS_ACCESS_KEY_ID", "AKIDENV"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
            ("AWS_SESSION_TOKEN", "t"),
            ("AWS_REGION", "us-west-2"),
        ];
        let got = resolve(env_of(&env), &files()).unwrap();
        assert_eq!(got.region.as_deref(), Some("us-west-2"));
        assert_eq!(
            got.auth,
            BedrockAuth::SigV4(AwsCredentials {
                access_key_id: "AKIDENV".into(),
                secret_access_key: ApiKey::new("s"),
                session_token: Some(ApiKey::new("t")),
            })
        );
    }

    #[test]
    fn named_profile_reads_both_files() {
        let got = resolve(env_of(&[("AWS_PROFILE", "work")]), &files()).unwrap();
        assert_eq!(got.region.as_deref(), Some("ap-south-1"));
        let BedrockAuth::SigV4(c) = got.auth else {
            panic!("expected sigv4")
        };
        assert_eq!(c.access_key_id, "AKIDWORK");
        assert_eq!(c.session_token, Some(ApiKey::new("tok")));
        let got = resolve(env_of(&[]), &files()).unwrap();
        assert_eq!(got.region.as_deref(), Some("eu-west-1"));
    }

    #[test]
    fn bearer_token_and_missing_credentials() {
        let got = resolve(
            env_of(&[("AWS_BEARER_TOKEN_BEDROCK", "abc")]),
            &ProfileFiles::default(),
        )
        .unwrap();
        assert_eq!(got.auth, BedrockAuth::Bearer(ApiKey::new("abc")));
        let err = resolve(env_of(&[]), &ProfileFiles::default()).unwrap_err();
        assert!(err.to_string().contains("AWS_ACCESS_KEY_ID"), "{err}");
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        let err = parse_profile_file("cfg", "[default]\nnot a setting\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "cfg:2: expected `key = value`, found `not a setting`"
        );
        let files = ProfileFiles {
            credentials: Some(("c".into(), "[default]\naws_access_key_id = A\n".into())),
            config: None,
        };
        assert!(matches!(
            resolve(env_of(&[]), &files),
            Err(CredentialsError::Incomplete { .. })
        ));
    }

    #[test]
    fn paths_follow_overrides() {
        let (c, f) = profile_paths(
            env_of(&[("AWS_CONFIG_FILE", "/x/cfg")]),
            Some(Path::new("/home/u")),
        );
        assert_eq!(c, Some(PathBuf::from("/home/u/.aws/credentials")));
        assert_eq!(f, Some(PathBuf::from("/x/cfg")));
    }
}
