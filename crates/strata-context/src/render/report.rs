//! What one render produced, chapter by chapter, and how it relates to the previous request.

use serde::Serialize;
use serde_json::Value;
use strata_session::EntryId;

use crate::render::digest::{Chapter, ChapterDigest, Divergence, RequestBytes};

/// Something about a rendered request its caller should know.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "note")]
#[non_exhaustive]
pub enum RenderNote {
    /// Patches were folded into the system chapter and the tools array holds only live tools:
    /// the provider has no mid-conversation system messages, or the policy rewrites in place.
    PatchesFolded {
        /// How many patches were folded.
        patches: usize,
    },
    /// A patch happened after the last user message and waits for the next one.
    PatchPending {
        /// The patch's `system` entry.
        entry_id: EntryId,
    },
    /// A tool declared mid-chain could not be deferred: the tools chapter grew, and the cache
    /// breaks at its end.
    ToolAppended {
        /// The tool.
        name: String,
        /// The patch that declared it.
        by: EntryId,
    },
    /// A patch re-declared a tool with a different definition: the tools chapter is rewritten
    /// from that tool on.
    ToolRedefined {
        /// The tool.
        name: String,
        /// The patch that changed it.
        by: EntryId,
    },
    /// The prefix (tools and system chapters) is under the row's cache minimum and stays so:
    /// nothing is cached until the conversation grows past the minimum, because filling it
    /// to the minimum would cost more than it saves (`render::floor`).
    BelowCacheMinimum {
        /// The prefix's estimated tokens.
        prefix: u64,
        /// The row's minimum.
        minimum: u64,
    },
    /// The prefix was under the row's cache minimum: a filler block at the end of the system
    /// chapter brings it past, since writing the minimum once and reading it after costs less
    /// than sending the prefix uncached (`render::floor`).
    CacheFloor {
        /// The prefix's estimated tokens before the filler.
        prefix: u64,
        /// The filler's estimated tokens.
        filler: u64,
        /// The row's minimum.
        minimum: u64,
    },
    /// Against the previous request, the tools chapter changed starting at this line.
    ToolsRewritten {
        /// The tool at the first changed line (`None`: the deferred-tools line or past the end).
        tool: Option<String>,
    },
}

/// Per-request accounting: each chapter's length and hash, and where it departs from the
/// previous request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RenderReport {
    /// Chapter 1 as the prompt prefix holds it.
    pub tools: ChapterDigest,
    /// Chapter 2.
    pub system: ChapterDigest,
    /// Chapter 3.
    pub messages: ChapterDigest,
    /// Deferred tool definitions, outside the prompt prefix.
    pub deferred: ChapterDigest,
    /// Where this request first differs from the previous one (`None`: no previous given).
    pub divergence: Option<Divergence>,
    /// Whether the deferred definitions differ from the previous request's.
    pub deferred_changed: bool,
    /// Folds, waiting patches, tools rewritten.
    pub notes: Vec<RenderNote>,
}

impl RenderReport {
    /// The report for `bytes`; a divergence in the tools chapter adds a note naming the first
    /// rewritten tool.
    pub(crate) fn new(
        bytes: &RequestBytes,
        digests: [ChapterDigest; 4],
        deferred_changed: bool,
        divergence: Option<Divergence>,
        mut notes: Vec<RenderNote>,
    ) -> Self {
        if let Some(Divergence::At {
            chapter: Chapter::Tools,
            chapter_offset,
            ..
        }) = &divergence
        {
            notes.push(RenderNote::ToolsRewritten {
                tool: tool_at(&bytes.tools, *chapter_offset),
            });
        }
        let [tools, system, messages, deferred] = digests;
        Self {
            tools,
            system,
            messages,
            deferred,
            divergence,
            deferred_changed,
            notes,
        }
    }

    /// Total bytes of tools ‖ system ‖ messages.
    pub fn prefix_bytes(&self) -> usize {
        self.tools.bytes + self.system.bytes + self.messages.bytes
    }
}

/// The name of the tool on the line holding `offset` of the tools chapter.
fn tool_at(tools: &[u8], offset: usize) -> Option<String> {
    let start = tools[..offset.min(tools.len())]
        .iter()
        .rposition(|byte| *byte == b'\n')
        .map_or(0, |at| at + 1);
    let end = tools[start..]
        .iter()
        .position(|byte| *byte == b'\n')
        .map_or(tools.len(), |at| start + at);
    let line: Value = serde_json::from_slice(&tools[start..end]).ok()?;
    line.get("name")?.as_str().map(str::to_owned)
}
