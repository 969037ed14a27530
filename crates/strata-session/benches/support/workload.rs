//! The benchmark workload: a large Pi-format session (user → assistant with a tool call → tool
//! result of 1.5 KB, a compaction every 5,000 entries, a branch every 20,000) and the part of
//! context building that touches the session (path, compaction cut, typed entries).

use std::io::Write;
use std::path::Path;

use serde_json::json;
use strata_session::{
    AgentMessage, AssistantMessage, CompactionEntry, ContentBlock, Entry, EntryBase, EntryId,
    EntryKind, EntryRef, MessageContent, MessageEntry, ModelChangeEntry, Role, SessionError,
    StopReason, TextContent, ThinkingLevelChangeEntry, ToolCall, ToolResultMessage, Tree, Usage,
    UserMessage, format_iso_millis,
};

/// What was generated.
pub struct Generated {
    /// Entries written (the header not counted).
    pub entries: usize,
    /// File size in bytes.
    pub bytes: u64,
}

const START_MILLIS: i64 = 1_768_471_200_000;

/// Distinct 8-hex ids that look random (an odd multiplier is a bijection on u32).
fn id_for(n: usize) -> EntryId {
    EntryId::from(format!(
        "{:08x}",
        (n as u32).wrapping_add(1).wrapping_mul(0x9E37_79B1)
    ))
}

fn filler(seed: usize, len: usize) -> String {
    const WORDS: [&str; 12] = [
        "fn",
        "let",
        "match",
        "session",
        "entry",
        "tree",
        "parse",
        "\"quoted\"",
        "line\n",
        "{ }",
        "path",
        "cache",
    ];
    let mut out = String::with_capacity(len + 16);
    let mut n = seed;
    while out.len() < len {
        out.push_str(WORDS[n % WORDS.len()]);
        out.push(' ');
        n = n.wrapping_mul(31).wrapping_add(7);
    }
    out.truncate(len);
    out
}

/// Writes `entries` entries (plus the header) to `path`.
pub fn generate(path: &Path, entries: usize) -> std::io::Result<Generated> {
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    writeln!(
        out,
        "{}",
        json!({"type":"session","version":3,"id":"0190a000-0000-7000-8000-00000000beef","timestamp":format_iso_millis(START_MILLIS),"cwd":"/home/dev/project"})
    )?;
    let mut bytes = 0u64;
    let mut parent: Option<EntryId> = None;
    // The current path, to pick compaction and branch points.
    let mut path_ids: Vec<EntryId> = Vec::new();
    let mut call = 0usize;
    for n in 0..entries {
        let id = id_for(n);
        let millis = START_MILLIS + n as i64 * 1000;
        let base = EntryBase {
            id: id.clone(),
            parent_id: parent.clone(),
            timestamp: format_iso_millis(millis),
        };
        let entry = if n == 0 {
            Entry::ModelChange(ModelChangeEntry {
                base,
                provider: "anthropic".into(),
                model_id: "claude-sonnet-4-5".into(),
                extra: Default::default(),
            })
        } else if n == 1 {
            Entry::ThinkingLevelChange(ThinkingLevelChangeEntry {
                base,
                thinking_level: "medium".into(),
                extra: Default::default(),
            })
        } else if n % 5000 == 0 {
            let keep_from = path_ids.len().saturating_sub(60);
            Entry::Compaction(Box::new(CompactionEntry {
                base,
                summary: filler(n, 3000),
                first_kept_entry_id: path_ids.get(keep_from).cloned(),
                tokens_before: 150_000,
                details: Some(json!({"readFiles":["src/lib.rs"],"modifiedFiles":["src/tree.rs"]})),
                from_hook: None,
                usage: None,
                system_message: None,
                system: None,
                tools: None,
                extra: Default::default(),
            }))
        } else {
            let message = match n % 3 {
                2 => AgentMessage::User(UserMessage {
                    content: MessageContent::Text(filler(n, 400)),
                    timestamp: millis,
                    extra: Default::default(),
                }),
                0 => {
                    call += 1;
                    AgentMessage::Assistant(AssistantMessage {
                        content: vec![
                            ContentBlock::Text(TextContent {
                                text: filler(n, 300),
                                text_signature: None,
                                extra: Default::default(),
                            }),
                            ContentBlock::ToolCall(ToolCall {
                                id: format!("toolu_{call:06}"),
                                name: "read".into(),
                                arguments: json!({"path": format!("src/file{}.rs", n % 97), "offset": 1, "limit": 200}),
                                thought_signature: None,
                                extra: Default::default(),
                            }),
                        ],
                        api: "anthropic-messages".into(),
                        provider: "anthropic".into(),
                        model: "claude-sonnet-4-5".into(),
                        usage: Usage {
                            input: 1200,
                            output: 340,
                            cache_read: 80_000,
                            cache_write: 400,
                            total_tokens: 81_940,
                            ..Default::default()
                        },
                        stop_reason: StopReason::ToolUse,
                        error_message: None,
                        thinking_level: None,
                        timestamp: millis,
                        extra: Default::default(),
                    })
                }
                _ => AgentMessage::ToolResult(ToolResultMessage {
                    tool_call_id: format!("toolu_{call:06}"),
                    tool_name: "read".into(),
                    content: vec![ContentBlock::Text(TextContent {
                        text: filler(n, 1500),
                        text_signature: None,
                        extra: Default::default(),
                    })],
                    details: None,
                    is_error: false,
                    timestamp: millis,
                    extra: Default::default(),
                }),
            };
            Entry::Message(MessageEntry {
                base,
                message: strata_session::LazyMessage::new(message),
                extra: Default::default(),
            })
        };
        let line = entry.to_json_line().map_err(std::io::Error::other)?;
        bytes += line.len() as u64 + 1;
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")?;
        path_ids.push(id.clone());
        parent = Some(id);
        if n > 0 && n % 20_000 == 0 {
            // Branch: the next entry continues from 1,000 entries back on the current path.
            let back = path_ids.len().saturating_sub(1000);
            path_ids.truncate(back);
            parent = path_ids.last().cloned();
        }
    }
    out.flush()?;
    Ok(Generated { entries, bytes })
}

/// What context building reads from the session for the leaf: the path, the latest compaction
/// on it, the kept and later entries parsed into typed values, and the last thinking level and
/// model (Pi's `buildSessionContext` inputs).
pub fn context_inputs(tree: &Tree) -> Result<ContextInputs, SessionError> {
    let Some(leaf) = tree.leaf() else {
        return Ok(ContextInputs {
            chain: Vec::new(),
            thinking: None,
            model: None,
        });
    };
    // Walk up from the leaf: the entries after the latest compaction, then its kept span, then
    // on to the root only while a setting is still unknown. The first setting met going up is
    // the last on the path.
    let mut walk = tree.walk_to_root(leaf);
    let mut settings = Settings::default();
    let mut after = Vec::new();
    let mut compaction = None;
    for entry in walk.by_ref() {
        settings.note(entry);
        if entry.kind() == EntryKind::Compaction {
            compaction = Some(entry.entry()?);
            break;
        }
        after.push(entry);
    }
    let mut kept = Vec::new();
    if let Some(Entry::Compaction(c)) = &compaction {
        let mut found = false;
        for entry in walk.by_ref() {
            settings.note(entry);
            kept.push(entry);
            if Some(entry.id()) == c.first_kept_entry_id.as_ref() {
                found = true;
                break;
            }
        }
        if !found {
            // Pi emits no kept entries when `firstKeptEntryId` is not on the path.
            kept.clear();
        }
    }
    for entry in walk {
        if settings.thinking.is_some() && settings.model.is_some() {
            break;
        }
        settings.note(entry);
    }
    let mut chain =
        Vec::with_capacity(usize::from(compaction.is_some()) + kept.len() + after.len());
    chain.extend(compaction);
    for entry in kept.iter().rev().chain(after.iter().rev()) {
        chain.push(entry.entry()?);
    }
    Ok(ContextInputs {
        chain,
        thinking: settings.thinking.map(|e| e.entry()).transpose()?,
        model: settings.model.map(|e| e.entry()).transpose()?,
    })
}

/// The last thinking-level and model entries met walking up a path.
#[derive(Default)]
struct Settings<'a> {
    thinking: Option<EntryRef<'a>>,
    model: Option<EntryRef<'a>>,
}

impl<'a> Settings<'a> {
    fn note(&mut self, entry: EntryRef<'a>) {
        match entry.kind() {
            EntryKind::ThinkingLevelChange if self.thinking.is_none() => {
                self.thinking = Some(entry)
            }
            EntryKind::ModelChange | EntryKind::Message(Role::Assistant)
                if self.model.is_none() =>
            {
                self.model = Some(entry);
            }
            _ => {}
        }
    }
}

/// The typed inputs of one context build.
pub struct ContextInputs {
    /// [compaction?, kept…, after…] as typed entries.
    pub chain: Vec<Entry>,
    /// The last `thinking_level_change` on the path.
    pub thinking: Option<Entry>,
    /// The last `model_change` or assistant message on the path.
    pub model: Option<Entry>,
}
