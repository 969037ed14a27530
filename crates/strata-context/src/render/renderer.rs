//! Incremental rendering: the previous request's converted and serialized messages are kept
//! and reused, so appending to a long session serializes only what was appended.

use strata_provider::{Capabilities, Message};
use strata_session::{EntryId, LazyMessage};

use crate::chain::ModelRef;
use crate::flatten::Context;
use crate::render::digest::{
    self, Chapter, ChapterDigest, Divergence, Fnv1a, RequestBytes, common_prefix,
};
use crate::render::plan::Item;
use crate::render::report::RenderReport;
use crate::render::{Frame, RenderOptions, Rendered, breakpoints, tools_bytes};
use crate::system::SystemPatch;

/// Renders successive contexts of one session, reusing the previous request's bytes.
///
/// Entries are immutable once appended, so a message rendered for an entry is reused as long
/// as the request keeps it at the same place; the first message that differs and everything
/// after it are rendered again. The result is byte-identical to [`render_with`](super::render_with).
/// Use one renderer per session and provider: entry ids are only unique within a session.
#[derive(Debug, Clone)]
pub struct Renderer {
    capabilities: Capabilities,
    options: RenderOptions,
    state: Option<State>,
}

/// The previous request and what each of its messages came from.
#[derive(Debug, Clone)]
struct State {
    rendered: Rendered,
    model: Option<ModelRef>,
    sources: Vec<Source>,
    /// End of each message's line in `rendered.bytes.messages`.
    line_ends: Vec<usize>,
    /// The messages chapter's running hash after each line.
    hashes: Vec<Fnv1a>,
    digests: [ChapterDigest; 4],
}

/// What a message of chapter 3 was rendered from.
#[derive(Debug, Clone)]
enum Source {
    Message(EntryId, LazyMessage),
    Patches(Vec<SystemPatch>),
    MissingResult(EntryId, String),
}

impl Source {
    fn of(context: &Context, item: Item<'_>) -> Self {
        match item {
            Item::Message(index) => {
                let message = &context.messages[index];
                Self::Message(message.entry_id.clone(), message.message.clone())
            }
            Item::Patches { first, end } => {
                Self::Patches(context.system.patches[first..end].to_vec())
            }
            Item::MissingResult { turn, call_id } => {
                Self::MissingResult(context.messages[turn].entry_id.clone(), call_id.to_owned())
            }
        }
    }

    /// Whether `item` renders to the same message as this source did.
    fn matches(&self, context: &Context, item: Item<'_>) -> bool {
        match (self, item) {
            (Self::Message(id, message), Item::Message(index)) => {
                let now = &context.messages[index];
                *id == now.entry_id && *message == now.message
            }
            (Self::Patches(patches), Item::Patches { first, end }) => {
                *patches == context.system.patches[first..end]
            }
            (Self::MissingResult(id, call), Item::MissingResult { turn, call_id }) => {
                *id == context.messages[turn].entry_id && call == call_id
            }
            _ => false,
        }
    }
}

impl Renderer {
    /// A renderer for one provider's capabilities and fixed options.
    pub fn new(capabilities: Capabilities, options: RenderOptions) -> Self {
        Self {
            capabilities,
            options,
            state: None,
        }
    }

    /// The last request rendered, if any.
    pub fn rendered(&self) -> Option<&Rendered> {
        self.state.as_ref().map(|state| &state.rendered)
    }

    /// Sets whose shapes the next requests take ([`RenderOptions::dialect`]). The messages
    /// already rendered stay valid: the dialect changes the system chapter and the adapter's
    /// wire forms, not the converted conversation.
    pub fn set_dialect(&mut self, dialect: strata_provider::Dialect) {
        self.options.dialect = dialect;
    }

    /// Forgets the previous request: the next render starts from nothing.
    pub fn reset(&mut self) {
        self.state = None;
    }

    /// Renders `context`; the report's divergence is against the previous render (none for
    /// the first). After a model change every message is rendered again.
    pub fn render(&mut self, context: &Context) -> (&Rendered, RenderReport) {
        let frame = Frame::new(context, &self.capabilities, &self.options);
        let mut previous = self.state.take();
        if let Some(state) = previous.as_mut()
            && state.model != context.model
        {
            // Assistant turns convert differently for another model: keep the old bytes to
            // report the divergence, but reuse none of the messages.
            state.sources.clear();
            state.line_ends.clear();
            state.hashes.clear();
            state.model = context.model.clone();
        }
        let (state, report) = self.render_over(context, &frame, previous);
        let state = self.state.insert(state);
        (&state.rendered, report)
    }

    /// Renders against `previous` (or from nothing), reusing its messages up to the first
    /// change.
    fn render_over(
        &self,
        context: &Context,
        frame: &Frame<'_>,
        previous: Option<State>,
    ) -> (State, RenderReport) {
        let had_previous = previous.is_some();
        let mut state = previous.unwrap_or_else(|| State {
            rendered: Rendered {
                request: frame.request_head(context, &self.options),
                bytes: RequestBytes::default(),
                notes: Vec::new(),
            },
            model: context.model.clone(),
            sources: Vec::new(),
            line_ends: Vec::new(),
            hashes: Vec::new(),
            digests: [ChapterDigest::of(&[]); 4],
        });
        let old_len = state.rendered.bytes.len();
        let items = &frame.plan.items;
        let kept = state
            .sources
            .iter()
            .zip(items)
            .take_while(|(source, item)| source.matches(context, **item))
            .count();

        // Chapters 1 and 2 are small: rebuild them, and keep the old digests when equal.
        let mut tools = Vec::new();
        let mut deferred = Vec::new();
        tools_bytes(&frame.tools, &mut tools, &mut deferred);
        let mut system = Vec::new();
        for block in &frame.system {
            digest::write_line(&mut system, block);
        }

        // Chapter 3: keep the first `kept` messages, render the rest.
        let start = if kept == 0 {
            0
        } else {
            state.line_ends[kept - 1]
        };
        state.sources.truncate(kept);
        state.line_ends.truncate(kept);
        state.hashes.truncate(kept);
        let mut messages = std::mem::take(&mut state.rendered.request.messages);
        messages.truncate(kept);
        let mut suffix = Vec::new();
        self.render_items(context, frame, kept, &mut state, &mut messages, &mut suffix);

        let old = std::mem::take(&mut state.rendered.bytes);
        let divergence = had_previous.then(|| {
            if tools != old.tools {
                let at = common_prefix(&tools, &old.tools);
                Divergence::At {
                    offset: at,
                    chapter: Chapter::Tools,
                    chapter_offset: at,
                }
            } else if system != old.system {
                let at = common_prefix(&system, &old.system);
                Divergence::At {
                    offset: tools.len() + at,
                    chapter: Chapter::System,
                    chapter_offset: at,
                }
            } else {
                let at = start + common_prefix(&suffix, &old.messages[start..]);
                let new_len = start + suffix.len();
                if at == old.messages.len() && at == new_len {
                    Divergence::Identical
                } else if at == old.messages.len() {
                    Divergence::Extends { at: old_len }
                } else {
                    Divergence::At {
                        offset: tools.len() + system.len() + at,
                        chapter: Chapter::Messages,
                        chapter_offset: at,
                    }
                }
            }
        });
        let reuse = |new: &[u8], old: &[u8], digest: ChapterDigest| {
            if had_previous && new == old {
                digest
            } else {
                ChapterDigest::of(new)
            }
        };
        let tools_digest = reuse(&tools, &old.tools, state.digests[0]);
        let system_digest = reuse(&system, &old.system, state.digests[1]);
        let deferred_digest = reuse(&deferred, &old.deferred, state.digests[3]);
        let deferred_changed = had_previous && deferred != old.deferred;
        let mut chapter_messages = old.messages;
        chapter_messages.truncate(start);
        chapter_messages.extend_from_slice(&suffix);

        let mut request = frame.request_head(context, &self.options);
        request.messages = messages;
        request.breakpoints = breakpoints(&request, &self.capabilities, self.options.ttl);
        state.rendered = Rendered {
            request,
            bytes: RequestBytes {
                tools,
                deferred,
                system,
                messages: chapter_messages,
            },
            notes: frame.notes.clone(),
        };
        state.digests = [
            tools_digest,
            system_digest,
            messages_digest(&state),
            deferred_digest,
        ];
        let report = RenderReport::new(
            &state.rendered.bytes,
            state.digests,
            deferred_changed,
            divergence,
            frame.notes.clone(),
        );
        (state, report)
    }

    /// Converts and serializes plan items from `from` on into `messages` and `suffix`,
    /// recording each line's end and running hash.
    fn render_items(
        &self,
        context: &Context,
        frame: &Frame<'_>,
        from: usize,
        state: &mut State,
        messages: &mut Vec<Message>,
        suffix: &mut Vec<u8>,
    ) {
        let start = state.line_ends.last().copied().unwrap_or(0);
        let mut hash = state.hashes.last().copied().unwrap_or_default();
        for item in &frame.plan.items[from..] {
            let message = frame.message(context, &self.capabilities, *item);
            let line_start = suffix.len();
            digest::write_line(suffix, &message);
            hash.update(&suffix[line_start..]);
            state.hashes.push(hash);
            state.line_ends.push(start + suffix.len());
            state.sources.push(Source::of(context, *item));
            messages.push(message);
        }
    }
}

fn messages_digest(state: &State) -> ChapterDigest {
    ChapterDigest {
        bytes: state.rendered.bytes.messages.len(),
        hash: state.hashes.last().copied().unwrap_or_default().value(),
    }
}
