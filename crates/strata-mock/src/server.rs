//! The HTTP server: provider routes, admin routes under `/_mock/`, and [`MockServer`].

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, RawQuery, State as AxumState};
use axum::http::{HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::MockError;
use crate::cache::CacheSimulator;
use crate::cached_contents::{CacheRefusal, CachedContents};
use crate::clock::VirtualClock;
use crate::config::{MockConfig, Protocol};
use crate::diagnosis::{Diagnosis, Fingerprint, Fingerprints, diagnose};
use crate::fault::{Fault, FaultKind};
use crate::latency::{LatencyModel, RequestShape};
use crate::output;
use crate::playback::{Pick, Player, conversation_key};
use crate::prompt::Chapter;
use crate::protocol::anthropic::Anthropic;
use crate::protocol::bedrock::Bedrock;
use crate::protocol::chat::Chat;
use crate::protocol::gemini::Gemini;
use crate::protocol::responses::{Responses, output_items};
use crate::protocol::{ErrorKind, ErrorResponse, Outcome, ParseContext, Wire, json_body};
use crate::record::{Accounting, Change, RequestRecord};
use crate::scenario::{self, Scenario};
use crate::tokens::Tokenizer;
use crate::websocket::Connection;

/// Largest request body accepted by default (a 1M-token prompt is about 4 MB of JSON).
const BODY_LIMIT: usize = 64 * 1024 * 1024;

/// A provider route's body, or why axum could not read it (too large, cut off).
type RequestBody = Result<Bytes, BytesRejection>;

/// How many of the newest records keep their request body.
const BODIES_KEPT: usize = 256;

/// Shared state of one server.
pub(crate) struct State {
    config: MockConfig,
    tokenizer: Tokenizer,
    pub(crate) clock: VirtualClock,
    cache: Mutex<CacheSimulator>,
    records: Mutex<VecDeque<RequestRecord>>,
    faults: Mutex<VecDeque<Fault>>,
    scenario: RwLock<Option<Arc<Scenario>>>,
    fired_turns: Mutex<HashSet<usize>>,
    player: Mutex<Player>,
    stored_responses: Mutex<HashMap<String, Vec<Value>>>,
    /// The block hashes of the last request in each cache namespace, to name what changed.
    last_blocks: Mutex<HashMap<String, Vec<(Chapter, u64)>>>,
    /// What each response's request looked like, for the cache diagnoses of later requests.
    fingerprints: Mutex<Fingerprints>,
    /// Anthropic message threads held for continues.
    threads: Mutex<crate::thread::Threads>,
    seq: AtomicU64,
    record_file: Option<Mutex<std::fs::File>>,
    /// Gemini explicit caches.
    cached_contents: Mutex<CachedContents>,
    /// Raised by [`MockServer::close_sockets`]: a socket opened before the raise closes at its
    /// next message.
    pub(crate) socket_epoch: AtomicU64,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding a lock leaves plain data behind; keep serving.
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What a provider handler produced before the body is sent.
enum Prepared {
    Error(ErrorResponse),
    Json {
        body: Bytes,
        fault: Option<FaultKind>,
    },
    Stream {
        frames: Vec<Bytes>,
        fault: Option<FaultKind>,
    },
}

/// How the route asks for a stream, when the route and not the body decides.
#[derive(Clone, Copy)]
enum Mode {
    FromBody,
    Stream,
    Once,
    /// Gemini `streamGenerateContent` without `alt=sse`: a JSON array.
    JsonArray,
}

impl State {
    pub(crate) fn new(config: MockConfig, record_file: Option<std::fs::File>) -> Self {
        let scenario = config.scenario.clone().map(Arc::new);
        Self {
            config,
            tokenizer: Tokenizer::new(),
            clock: VirtualClock::new(),
            cache: Mutex::new(CacheSimulator::new()),
            records: Mutex::new(VecDeque::new()),
            faults: Mutex::new(VecDeque::new()),
            scenario: RwLock::new(scenario),
            fired_turns: Mutex::new(HashSet::new()),
            player: Mutex::new(Player::new()),
            stored_responses: Mutex::new(HashMap::new()),
            last_blocks: Mutex::new(HashMap::new()),
            fingerprints: Mutex::new(Fingerprints::default()),
            threads: Mutex::new(crate::thread::Threads::default()),
            seq: AtomicU64::new(0),
            record_file: record_file.map(Mutex::new),
            cached_contents: Mutex::new(CachedContents::default()),
            socket_epoch: AtomicU64::new(0),
        }
    }

    pub(crate) fn requests(&self) -> Vec<RequestRecord> {
        lock(&self.records).iter().cloned().collect()
    }

    pub(crate) fn push_fault(&self, fault: Fault) {
        lock(&self.faults).push_back(fault);
    }

    pub(crate) fn load_scenario(&self, scenario: Scenario) {
        if let Ok(mut slot) = self.scenario.write() {
            *slot = Some(Arc::new(scenario));
        }
        lock(&self.fired_turns).clear();
        *lock(&self.player) = Player::new();
    }

    pub(crate) fn reset(&self) {
        lock(&self.cache).clear();
        lock(&self.records).clear();
        lock(&self.faults).clear();
        lock(&self.fired_turns).clear();
        *lock(&self.player) = Player::new();
        lock(&self.stored_responses).clear();
        lock(&self.last_blocks).clear();
        lock(&self.fingerprints).clear();
        *lock(&self.cached_contents) = CachedContents::default();
        lock(&self.threads).clear();
    }

    /// A `response.create` message on a Responses socket, answered as a streamed Responses
    /// request: its SSE frames (cut as a queued fault says, with whether the socket then
    /// closes), or the error's status and body.
    pub(crate) fn socket_turn(
        &self,
        path: String,
        body: &[u8],
        connection: &Connection,
    ) -> Result<(Vec<Bytes>, bool), (u16, Bytes)> {
        match self.process::<Responses>(path, None, Mode::Stream, body, Some(connection)) {
            Prepared::Error((status, _, body)) => Err((status.as_u16(), body)),
            Prepared::Json { body, .. } => Ok((vec![body], false)),
            Prepared::Stream { mut frames, fault } => {
                let closes = match fault {
                    Some(FaultKind::CutAfter { events }) => {
                        frames.truncate(events);
                        true
                    }
                    Some(FaultKind::StreamError { after_events }) => {
                        frames.truncate(after_events);
                        frames.push(Responses::stream_error(frames.len()));
                        false
                    }
                    _ => false,
                };
                Ok((frames, closes))
            }
        }
    }

    /// Records a socket message refused before it was read as a request (an expired
    /// connection, an unknown previous response), with the error event sent.
    pub(crate) fn record_socket_refusal(&self, path: String, bytes: usize, error: String) {
        let mut record = self.new_record::<Responses>(path, None);
        record.websocket = true;
        record.upload_bytes = bytes as u64;
        record.status = 400;
        record.error = Some(error);
        self.record(record);
    }

    /// Whether a stored response (`store: true`) has this id.
    pub(crate) fn stored(&self, id: &str) -> bool {
        lock(&self.stored_responses).contains_key(id)
    }

    /// The first block of `prompt` that differs from the previous request in `namespace`.
    fn first_change(&self, namespace: &str, prompt: &crate::prompt::Prompt) -> Option<Change> {
        let blocks: Vec<(Chapter, u64)> =
            prompt.blocks.iter().map(|b| (b.chapter, b.hash)).collect();
        let previous = lock(&self.last_blocks).insert(namespace.to_owned(), blocks.clone())?;
        let block = previous.iter().zip(&blocks).position(|(a, b)| a != b)?;
        Some(Change {
            chapter: blocks[block].0,
            block,
        })
    }

    fn take_fault(&self, protocol: Protocol) -> Option<FaultKind> {
        let mut faults = lock(&self.faults);
        let index = faults
            .iter()
            .position(|f| f.protocol.is_none_or(|p| p == protocol))?;
        let fault = faults.get_mut(index)?;
        let kind = fault.kind.clone();
        fault.times = fault.times.saturating_sub(1);
        if fault.times == 0 {
            faults.remove(index);
        }
        Some(kind)
    }

    fn record(&self, record: RequestRecord) {
        if let (Some(file), Ok(line)) = (&self.record_file, serde_json::to_string(&record)) {
            let mut file = lock(file);
            let _ = writeln!(file, "{line}");
        }
        let limit = if self.config.max_records == 0 {
            10_000
        } else {
            self.config.max_records
        };
        let mut records = lock(&self.records);
        while records.len() >= limit {
            records.pop_front();
        }
        records.push_back(record);
        // Bodies of large requests add up; only the newest ones keep theirs.
        let len = records.len();
        if let Some(old) = len
            .checked_sub(BODIES_KEPT + 1)
            .and_then(|i| records.get_mut(i))
        {
            old.body = None;
            old.thread_body = None;
        }
    }

    fn refuse<W: Wire>(&self, record: RequestRecord, kind: ErrorKind) -> Prepared {
        self.refuse_with(record, W::error(&kind))
    }

    /// Sends `response`, recording it as the request's refusal.
    fn refuse_with(&self, mut record: RequestRecord, response: ErrorResponse) -> Prepared {
        let (status, headers, body) = response;
        record.status = status.as_u16();
        record.error = Some(String::from_utf8_lossy(&body).into_owned());
        self.record(record);
        Prepared::Error((status, headers, body))
    }

    /// A record of a request to `path` on `W`'s route, before anything is known of it.
    fn new_record<W: Wire>(&self, path: String, model: Option<String>) -> RequestRecord {
        RequestRecord::received(
            self.seq.fetch_add(1, Ordering::Relaxed) + 1,
            W::PROTOCOL,
            path,
            model.unwrap_or_default(),
            self.clock.now_ms(),
        )
    }

    /// Refuses a request whose body was never parsed (too large, unknown method), and
    /// records it like any other.
    fn refuse_unread<W: Wire>(
        &self,
        path: String,
        model: Option<String>,
        kind: ErrorKind,
    ) -> Response {
        let mut record = self.new_record::<W>(path, model);
        let (status, headers, body) = W::error(&kind);
        record.status = status.as_u16();
        record.error = Some(String::from_utf8_lossy(&body).into_owned());
        self.record(record);
        (status, headers, body).into_response()
    }

    /// The largest body a provider route reads.
    fn body_limit(&self) -> usize {
        match self.config.max_body_bytes {
            0 => BODY_LIMIT,
            limit => limit,
        }
    }

    /// Parses, accounts, plays the script and renders; runs on the blocking pool.
    fn process<W: Wire>(
        &self,
        path: String,
        path_model: Option<String>,
        mode: Mode,
        body: &[u8],
        socket: Option<&Connection>,
    ) -> Prepared {
        let mut record = self.new_record::<W>(path, path_model.clone());
        record.body_bytes = body.len() as u64;
        let (seq, now) = (record.seq, record.at_ms);
        record.websocket = socket.is_some();
        record.upload_bytes = body.len() as u64;
        let sent = match json_body(body) {
            Ok(value) => value,
            Err(message) => return self.refuse::<W>(record, ErrorKind::BadRequest(message)),
        };
        // A message-thread continue stands for the full conversation the thread holds.
        let thread = match W::PROTOCOL {
            Protocol::Anthropic => match lock(&self.threads).resolve(&sent, now) {
                Ok(thread) => thread,
                Err(e) => return self.refuse_with(record, e.response()),
            },
            _ => None,
        };
        record.continued = thread.as_ref().and_then(|t| t.continues.clone());
        let mut value = thread
            .as_ref()
            .map_or_else(|| sent.clone(), |t| t.body.clone());
        // A Gemini request naming an explicit cache is served as the cache's parts first.
        let mut explicit_tokens = 0;
        if W::PROTOCOL == Protocol::Gemini {
            let model = path_model.as_deref().unwrap_or_default();
            match lock(&self.cached_contents).resolve(&value, model, now) {
                Ok(Some(resolved)) => {
                    value = resolved.body;
                    explicit_tokens = resolved.cached_tokens;
                    record.cached_content = sent
                        .get("cachedContent")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                }
                Ok(None) => {}
                Err(CacheRefusal::NotFound(message)) => {
                    return self.refuse::<W>(record, ErrorKind::NotFound(message));
                }
                Err(CacheRefusal::BadRequest(message)) => {
                    return self.refuse::<W>(record, ErrorKind::BadRequest(message));
                }
            }
        }
        let value = &value;
        let lane = crate::websocket::lane(value);
        // On a socket the connection's own memory answers first (`store: false` state lives
        // only there); a stored response is found from anywhere.
        let previous = |id: &str| {
            socket
                .and_then(|c| c.previous(&lane, id))
                .or_else(|| lock(&self.stored_responses).get(id).cloned())
        };
        let ctx = ParseContext {
            tokenizer: &self.tokenizer,
            previous: &previous,
        };
        let parsed = W::parse(value, path_model.as_deref(), &ctx);
        let key = conversation_key(W::PROTOCOL, value);
        // Only a sequence script's recall turns read the transcript.
        let sequence = self
            .scenario
            .read()
            .ok()
            .and_then(|s| {
                s.as_ref()
                    .map(|s| s.playback == scenario::Playback::Sequence)
            })
            .unwrap_or(false);
        let transcript = if sequence && W::PROTOCOL == Protocol::Anthropic {
            // What the model is shown: a cleared reminder is not.
            scenario::transcript_of(&crate::protocol::anthropic::shown(value))
        } else if sequence {
            scenario::transcript_of(value)
        } else {
            String::new()
        };
        if self.config.record_bodies {
            record.body = Some(value.clone());
            if record.continued.is_some() || record.cached_content.is_some() {
                record.thread_body = Some(sent.clone());
            }
        }
        let mut parsed = match parsed {
            Ok(parsed) => parsed,
            Err(message) => return self.refuse::<W>(record, ErrorKind::BadRequest(message)),
        };
        match mode {
            Mode::FromBody => {}
            Mode::Stream | Mode::JsonArray => parsed.stream = true,
            Mode::Once => parsed.stream = false,
        }
        record.model = parsed.model.clone();
        record.stream = parsed.stream;
        record.cache_key = parsed.cache_key.clone();
        let profile = self.config.profile(W::PROTOCOL, &parsed.model);
        record.cache_style = Some(profile.cache.style);
        // A feature the model refuses, refused before the script is consulted (no turn taken).
        if let Some((_, error)) = parsed
            .features
            .iter()
            .find(|(name, _)| profile.rejects.iter().any(|r| r == name))
        {
            let error = error.clone();
            return self.refuse::<W>(record, ErrorKind::BadRequest(error));
        }

        parsed.conversation.key = key;
        parsed.conversation.transcript = transcript;
        let total = parsed.prompt.total_tokens();
        // An over-window prompt is refused before the script is consulted, so that it takes
        // no turn: the harness compacts and sends another conversation, which must get the
        // turn this one would have had.
        if total > profile.context_window {
            let window = profile.context_window;
            return self.refuse::<W>(
                record,
                ErrorKind::ContextLength {
                    tokens: total,
                    window,
                },
            );
        }
        let scenario = self.scenario.read().ok().and_then(|s| s.clone());
        let side = scenario
            .as_deref()
            .is_some_and(|s| s.is_side_request(&parsed.model));
        // The reply is settled with the pick: a reply the output cap cuts does not consume
        // its turn (or summary entry), so the player goes back to where it was and the next
        // request gets the same turn — a keep-warm ping with `max_tokens: 1` leaves the
        // script as it found it.
        // A pre-warm generates nothing: a reply cut at zero tokens, which keeps its turn.
        let cap = if parsed.prewarm {
            Some(0)
        } else {
            parsed.max_output_tokens
        };
        let (pick, mut reply) = {
            let mut player = lock(&self.player);
            let scripted = scenario.is_some() && !side;
            let before = cap.filter(|_| scripted).map(|_| player.clone());
            let pick = match scenario.as_deref() {
                Some(s) if !side => player.pick(s, &parsed.conversation),
                _ => Pick::Echo,
            };
            let full = match &pick {
                Pick::Summary { text, .. } => scenario::summary_reply(text),
                // A plain text reply, as for a summary.
                _ if side => scenario::summary_reply(scenario::SIDE_REPLY),
                _ => scenario::reply(pick.turn(), &parsed.conversation),
            };
            let cut = cap.and_then(|cap| output::cut(&full, cap, &self.tokenizer));
            match cut {
                Some(cut) => {
                    if let Some(before) = before {
                        *player = before;
                    }
                    (pick, cut)
                }
                None => (pick, full),
            }
        };
        let cut = reply.stop == scenario::Stop::MaxTokens;
        if parsed.prewarm {
            // The response completes: nothing was asked of the model.
            reply.stop = scenario::Stop::EndTurn;
        }
        let turn = pick.turn();
        let fault = self.take_fault(W::PROTOCOL).or_else(|| {
            // A cut reply leaves the turn's fault for the request that plays the turn.
            if cut {
                return None;
            }
            let (index, spec) = turn?;
            let kind = spec.fault.clone()?;
            lock(&self.fired_turns).insert(index).then_some(kind)
        });
        record.fault = fault.clone();
        let refusal = match &fault {
            Some(FaultKind::RateLimit { retry_after_secs }) => Some(ErrorKind::RateLimit {
                retry_after_secs: *retry_after_secs,
            }),
            Some(FaultKind::ServerError) => Some(ErrorKind::Server),
            Some(FaultKind::Overloaded) => Some(ErrorKind::Overloaded),
            Some(FaultKind::StreamError { .. }) if !parsed.stream => Some(ErrorKind::Overloaded),
            Some(FaultKind::ContextLength) => Some(ErrorKind::ContextLength {
                tokens: total,
                window: profile.context_window.min(total.saturating_sub(1)),
            }),
            _ => None,
        };
        if let Some(kind) = refusal {
            return self.refuse::<W>(record, kind);
        }

        let namespace = format!(
            "{}|{}|{}|{}",
            W::PROTOCOL.name(),
            parsed.model,
            if W::PROTOCOL == Protocol::Responses {
                parsed.params
            } else {
                0
            },
            if profile.cache.keyed_by_cache_key {
                parsed.cache_key.as_deref().unwrap_or("")
            } else {
                ""
            }
        );
        // OpenAI's `prompt_cache_retention` sets the lifetime of what this request writes.
        let rules = match W::PROTOCOL {
            Protocol::Chat | Protocol::Responses => {
                std::borrow::Cow::Owned(profile.cache.with_retention(parsed.retention))
            }
            _ => std::borrow::Cow::Borrowed(&profile.cache),
        };
        let fingerprint = Fingerprint::of(
            &parsed.model,
            parsed.cache_key.as_deref(),
            parsed.params,
            &parsed.prompt,
        );
        // Request-level parameters the cache keys on (thinking, effort): Anthropic's only
        // invalidate the messages, OpenAI's effort the whole prompt (its namespace, below).
        if W::PROTOCOL == Protocol::Anthropic {
            parsed.prompt.key_messages_on(parsed.params);
        }
        // What a provider tool search in the reply brings in is input of this response.
        record.search_loaded_tokens =
            crate::tool_search::bill(&mut parsed, &reply, &self.tokenizer);
        let accounted = lock(&self.cache).account(&namespace, &rules, &parsed.prompt, now);
        let mut cache = match accounted {
            Ok(cache) => cache,
            Err(e) => return self.refuse::<W>(record, ErrorKind::BadRequest(e.to_string())),
        };
        if explicit_tokens > 0 {
            // An explicit cache is read whole while it lives, whatever the implicit one holds.
            cache.cache_read = explicit_tokens.min(cache.input_tokens);
            cache.uncached = cache.input_tokens - cache.cache_read;
            (
                cache.cache_write,
                cache.cache_write_5m,
                cache.cache_write_1h,
            ) = (0, 0, 0);
        }
        record.changed = self.first_change(&namespace, &parsed.prompt);
        if let Pick::Summary { kind, .. } = &pick {
            record.summary = Some(*kind);
        }
        let output::OutputTokens {
            total: output_tokens,
            reasoning: reasoning_tokens,
        } = output::count(&reply, &self.tokenizer);
        let diagnosis = parsed.diagnose.as_ref().map(|against| match against {
            Some(id) => diagnose(lock(&self.fingerprints).get(id), &fingerprint),
            // Anthropic's `previous_message_id: null` opts in with nothing to compare.
            None => Diagnosis::NoDivergence,
        });
        let response_id = match W::PROTOCOL {
            Protocol::Anthropic => Some(format!("msg_mock{seq:020}")),
            Protocol::Responses => Some(format!("resp_mock{seq:020}")),
            _ => None,
        };
        if let Some(id) = response_id {
            lock(&self.fingerprints).insert(id, fingerprint);
        }
        let outcome = Outcome {
            diagnosis,
            reply: &reply,
            cache: &cache,
            output_tokens,
            reasoning_tokens,
            id: format!("mock{seq:020}"),
            created: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            profile: &profile,
            delta_chars: if self.config.delta_chars == 0 {
                24
            } else {
                self.config.delta_chars
            },
        };
        if let Some(thread) = &thread {
            let content = W::respond(&parsed, &outcome)
                .get("content")
                .cloned()
                .unwrap_or_default();
            let id = format!("msg_{}", outcome.id);
            lock(&self.threads).hold(id, thread, content, now);
        }
        if W::PROTOCOL == Protocol::Responses && (parsed.store || socket.is_some()) {
            let mut items = std::mem::take(&mut parsed.items);
            items.extend(output_items(&parsed, &outcome));
            let id = format!("resp_{}", outcome.id);
            if let Some(connection) = socket {
                connection.remember(&lane, &id, items.clone());
            }
            if parsed.store {
                lock(&self.stored_responses).insert(id, items);
            }
        }
        let prepared = match mode {
            Mode::JsonArray => Prepared::Json {
                body: Bytes::from(Gemini::json_array(&parsed, &outcome).to_string()),
                fault,
            },
            _ if parsed.stream => Prepared::Stream {
                frames: W::stream(&parsed, &outcome),
                fault,
            },
            _ => Prepared::Json {
                body: Bytes::from(W::respond(&parsed, &outcome).to_string()),
                fault,
            },
        };
        let mut accounting = Accounting::from(&cache);
        accounting.input_cost_units = profile.cache.input_cost_units(
            cache.uncached,
            cache.cache_read,
            cache.cache_write_5m,
            cache.cache_write_1h,
        );
        record.cache = Some(accounting);
        record.ttft_ms = LatencyModel::default().time_to_first_token_ms(RequestShape {
            on_socket: socket.is_some(),
            upload_bytes: record.upload_bytes,
            uncached_tokens: cache.uncached + cache.cache_write,
            cached_tokens: cache.cache_read,
        });
        record.output_tokens = output_tokens;
        record.turn = reply.turn;
        self.record(record);
        prepared
    }
}

async fn serve<W: Wire>(
    state: Arc<State>,
    path: String,
    path_model: Option<String>,
    mode: Mode,
    body: RequestBody,
) -> Response {
    let body = match body {
        Ok(body) => body,
        Err(rejection) => {
            let kind = if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ErrorKind::TooLarge {
                    limit: state.body_limit(),
                }
            } else {
                ErrorKind::BadRequest(rejection.body_text())
            };
            return state.refuse_unread::<W>(path, path_model, kind);
        }
    };
    let worker = state.clone();
    let prepared = tokio::task::spawn_blocking(move || {
        worker.process::<W>(path, path_model, mode, &body, None)
    })
    .await;
    let prepared = match prepared {
        Ok(prepared) => prepared,
        Err(_) => Prepared::Error(W::error(&ErrorKind::Server)),
    };
    if matches!(
        &prepared,
        Prepared::Json {
            fault: Some(FaultKind::Hang),
            ..
        } | Prepared::Stream {
            fault: Some(FaultKind::Hang),
            ..
        }
    ) {
        // Never answers; the future is dropped when the client gives up.
        return std::future::pending().await;
    }
    match prepared {
        Prepared::Error((status, headers, body)) => (status, headers, body).into_response(),
        Prepared::Json { body, fault } => json_response(body, fault).await,
        Prepared::Stream { mut frames, fault } => {
            let mut delay = None;
            let mut stall = false;
            match fault {
                Some(FaultKind::CutAfter { events }) => frames.truncate(events),
                Some(FaultKind::Malformed { at_event }) => {
                    if let Some(frame) = frames.get_mut(at_event) {
                        *frame = W::malformed();
                    }
                }
                Some(FaultKind::StreamError { after_events }) => {
                    frames.truncate(after_events);
                    frames.push(W::stream_error(frames.len()));
                }
                Some(FaultKind::Slow { delay_ms }) => delay = Some(Duration::from_millis(delay_ms)),
                Some(FaultKind::StallAfter { events }) => {
                    frames.truncate(events);
                    stall = true;
                }
                _ => {}
            }
            let mut response = Response::new(frames_body(frames, delay, stall));
            let headers = response.headers_mut();
            headers.insert(
                "content-type",
                HeaderValue::from_static(W::STREAM_CONTENT_TYPE),
            );
            headers.insert("cache-control", HeaderValue::from_static("no-cache"));
            response
        }
    }
}

async fn json_response(body: Bytes, fault: Option<FaultKind>) -> Response {
    let body = match fault {
        Some(FaultKind::CutAfter { .. } | FaultKind::Malformed { .. }) => {
            Body::from(body.slice(..body.len() / 2))
        }
        Some(FaultKind::StallAfter { .. }) => {
            let head = body.slice(..body.len() / 2);
            let stalled = futures::StreamExt::chain(
                futures::stream::once(async move { Ok::<_, std::convert::Infallible>(head) }),
                futures::stream::pending(),
            );
            Body::from_stream(stalled)
        }
        Some(FaultKind::Slow { delay_ms }) => {
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            Body::from(body)
        }
        _ => Body::from(body),
    };
    let mut response = Response::new(body);
    response
        .headers_mut()
        .insert("content-type", HeaderValue::from_static("application/json"));
    response
}

/// A body sending `frames` one by one, each after `delay`. A cut stream ends cleanly after
/// its last frame: what the client sees is a body without the terminal event. A `stall`ed
/// one stays open and silent after its last frame instead.
fn frames_body(frames: Vec<Bytes>, delay: Option<Duration>, stall: bool) -> Body {
    let stream = futures::stream::unfold(frames.into_iter(), move |mut frames| async move {
        let frame = frames.next()?;
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
        Some((Ok::<_, std::convert::Infallible>(frame), frames))
    });
    if stall {
        return Body::from_stream(futures::StreamExt::chain(
            stream,
            futures::stream::pending(),
        ));
    }
    Body::from_stream(stream)
}

type Shared = AxumState<Arc<State>>;

async fn served_models(AxumState(state): Shared) -> Response {
    axum::Json(crate::served::model_list(&state.config.served)).into_response()
}

async fn served_props(AxumState(state): Shared) -> Response {
    axum::Json(crate::served::props(&state.config.served)).into_response()
}

async fn anthropic(AxumState(state): Shared, uri: Uri, body: RequestBody) -> Response {
    serve::<Anthropic>(state, uri.path().to_owned(), None, Mode::FromBody, body).await
}

async fn chat(AxumState(state): Shared, uri: Uri, body: RequestBody) -> Response {
    serve::<Chat>(state, uri.path().to_owned(), None, Mode::FromBody, body).await
}

async fn responses(AxumState(state): Shared, uri: Uri, body: RequestBody) -> Response {
    serve::<Responses>(state, uri.path().to_owned(), None, Mode::FromBody, body).await
}

async fn gemini(
    state: Arc<State>,
    uri: Uri,
    target: &str,
    query: Option<String>,
    body: RequestBody,
) -> Response {
    let path = uri.path().to_owned();
    let Some((model, method)) = target.rsplit_once(':') else {
        let kind = ErrorKind::NotFound(format!("unknown method in {target}"));
        return state.refuse_unread::<Gemini>(path, Some(target.to_owned()), kind);
    };
    let sse = query
        .as_deref()
        .is_some_and(|q| q.split('&').any(|p| p == "alt=sse"));
    let mode = match method {
        "generateContent" => Mode::Once,
        "streamGenerateContent" if sse => Mode::Stream,
        "streamGenerateContent" => Mode::JsonArray,
        other => {
            let kind = ErrorKind::NotFound(format!("method {other} is not supported"));
            return state.refuse_unread::<Gemini>(path, Some(model.to_owned()), kind);
        }
    };
    serve::<Gemini>(state, path, Some(model.to_owned()), mode, body).await
}

async fn gemini_short(
    AxumState(state): Shared,
    Path(target): Path<String>,
    RawQuery(query): RawQuery,
    uri: Uri,
    body: RequestBody,
) -> Response {
    gemini(state, uri, &target, query, body).await
}

async fn gemini_vertex(
    AxumState(state): Shared,
    Path((_project, _location, target)): Path<(String, String, String)>,
    RawQuery(query): RawQuery,
    uri: Uri,
    body: RequestBody,
) -> Response {
    gemini(state, uri, &target, query, body).await
}

/// `POST /v1beta/cachedContents` (and `/v1/`): creates an explicit cache (crate::cached_contents).
async fn create_cached_content(AxumState(state): Shared, body: Bytes) -> Response {
    let value = match json_body(&body) {
        Ok(value) => value,
        Err(message) => return gemini_error(&ErrorKind::BadRequest(message)),
    };
    let ctx_previous = |_: &str| None;
    let ctx = ParseContext {
        tokenizer: &state.tokenizer,
        previous: &ctx_previous,
    };
    let model = value
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or_default();
    // Tokens of the cache's parts: a request of them plus one text, less that text.
    let probe = json!({"role": "user", "parts": [{"text": "."}]});
    let tokens_of = |body: &Value| -> Result<u64, String> {
        Ok(Gemini::parse(body, Some(model), &ctx)?
            .prompt
            .total_tokens())
    };
    let count = |parts: &Value| -> Result<u64, String> {
        let mut with = parts.clone();
        if let Some(contents) = with.get_mut("contents").and_then(Value::as_array_mut) {
            contents.push(probe.clone());
        }
        let alone = tokens_of(&json!({"contents": [probe.clone()]}))?;
        Ok(tokens_of(&with)?.saturating_sub(alone))
    };
    let now = state.clock.now_ms();
    match lock(&state.cached_contents).create(&value, now, count) {
        Ok(resource) => axum::Json(resource).into_response(),
        Err(message) => gemini_error(&ErrorKind::BadRequest(message)),
    }
}

/// `GET /v1beta/cachedContents/{id}`: the cache, or 404 once it expired.
async fn get_cached_content(AxumState(state): Shared, Path(id): Path<String>) -> Response {
    let name = format!("cachedContents/{id}");
    match lock(&state.cached_contents).get(&name, state.clock.now_ms()) {
        Some(resource) => axum::Json(resource).into_response(),
        None => gemini_error(&ErrorKind::NotFound(format!(
            "CachedContent not found (or permission denied): {name}"
        ))),
    }
}

fn gemini_error(kind: &ErrorKind) -> Response {
    Gemini::error(kind).into_response()
}

async fn converse(
    AxumState(state): Shared,
    Path(model): Path<String>,
    uri: Uri,
    body: RequestBody,
) -> Response {
    serve::<Bedrock>(state, uri.path().to_owned(), Some(model), Mode::Once, body).await
}

async fn converse_stream(
    AxumState(state): Shared,
    Path(model): Path<String>,
    uri: Uri,
    body: RequestBody,
) -> Response {
    serve::<Bedrock>(
        state,
        uri.path().to_owned(),
        Some(model),
        Mode::Stream,
        body,
    )
    .await
}

async fn admin_requests(AxumState(state): Shared) -> Response {
    let mut out = String::new();
    for record in state.requests() {
        if let Ok(line) = serde_json::to_string(&record) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    ([("content-type", "application/x-ndjson")], out).into_response()
}

fn admin_error(message: String) -> Response {
    (
        StatusCode::BAD_REQUEST,
        axum::Json(json!({"error": message})),
    )
        .into_response()
}

async fn admin_advance(AxumState(state): Shared, body: Bytes) -> Response {
    let value: Value = match serde_json::from_slice(&body) {
        Ok(value) => value,
        Err(e) => {
            return admin_error(format!(
                "body must be {{\"seconds\": N}} or {{\"ms\": N}}: {e}"
            ));
        }
    };
    let ms = match (
        value.get("seconds").and_then(Value::as_f64),
        value.get("ms").and_then(Value::as_u64),
    ) {
        (Some(seconds), _) if seconds >= 0.0 => (seconds * 1000.0) as u64,
        (_, Some(ms)) => ms,
        _ => return admin_error("body must be {\"seconds\": N} or {\"ms\": N}".to_owned()),
    };
    let now = state.clock.advance(Duration::from_millis(ms));
    axum::Json(json!({"now_ms": now})).into_response()
}

async fn admin_clock(AxumState(state): Shared) -> Response {
    axum::Json(json!({"now_ms": state.clock.now_ms()})).into_response()
}

async fn admin_faults(AxumState(state): Shared, body: Bytes) -> Response {
    let faults: Vec<Fault> = match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Array(list)) => match serde_json::from_value(Value::Array(list)) {
            Ok(faults) => faults,
            Err(e) => return admin_error(format!("bad fault list: {e}")),
        },
        Ok(one) => match serde_json::from_value(one) {
            Ok(fault) => vec![fault],
            Err(e) => return admin_error(format!("bad fault: {e}")),
        },
        Err(e) => return admin_error(format!("body is not JSON: {e}")),
    };
    let count = faults.len();
    for fault in faults {
        state.push_fault(fault);
    }
    axum::Json(json!({"queued": count})).into_response()
}

async fn admin_list_faults(AxumState(state): Shared) -> Response {
    let faults: Vec<Fault> = lock(&state.faults).iter().cloned().collect();
    axum::Json(json!(faults)).into_response()
}

async fn admin_scenario(AxumState(state): Shared, body: Bytes) -> Response {
    let text = String::from_utf8_lossy(&body);
    match Scenario::from_toml(&text, "POST /_mock/scenario") {
        Ok(scenario) => {
            let turns = scenario.turns.len();
            state.load_scenario(scenario);
            axum::Json(json!({"turns": turns})).into_response()
        }
        Err(e) => admin_error(e.to_string()),
    }
}

async fn admin_reset(AxumState(state): Shared) -> Response {
    state.reset();
    axum::Json(json!({"reset": true})).into_response()
}

async fn not_found(uri: Uri) -> Response {
    (
        StatusCode::NOT_FOUND,
        axum::Json(json!({"error": {"message": format!("strata-mock has no route {}", uri.path()), "type": "not_found"}})),
    )
        .into_response()
}

/// The router of all routes over `state`.
pub(crate) fn router(state: Arc<State>) -> Router {
    Router::new()
        .route("/v1/messages", post(anthropic))
        .route("/v1/chat/completions", post(chat))
        .route("/chat/completions", post(chat))
        .route(
            "/v1/responses",
            post(responses).get(crate::websocket::upgrade),
        )
        .route("/responses", post(responses).get(crate::websocket::upgrade))
        .route("/v1beta/models/{target}", post(gemini_short))
        .route("/v1/models/{target}", post(gemini_short))
        .route(
            "/v1/projects/{project}/locations/{location}/publishers/google/models/{target}",
            post(gemini_vertex),
        )
        .route("/v1beta/cachedContents", post(create_cached_content))
        .route("/v1beta/cachedContents/{id}", get(get_cached_content))
        .route("/v1/cachedContents", post(create_cached_content))
        .route("/v1/cachedContents/{id}", get(get_cached_content))
        .route("/model/{model}/converse", post(converse))
        .route("/model/{model}/converse-stream", post(converse_stream))
        .route("/v1/models", get(served_models))
        .route("/props", get(served_props))
        .route("/_mock/requests", get(admin_requests))
        .route("/_mock/clock", get(admin_clock))
        .route("/_mock/clock/advance", post(admin_advance))
        .route("/_mock/faults", post(admin_faults).get(admin_list_faults))
        .route("/_mock/scenario", post(admin_scenario))
        .route("/_mock/reset", post(admin_reset))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(state.body_limit()))
        .with_state(state)
}

/// A running mock server; it shuts down when dropped.
pub struct MockServer {
    addr: SocketAddr,
    state: Arc<State>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer")
            .field("addr", &self.addr)
            .finish()
    }
}

/// Options of [`MockServer::start_with`].
#[derive(Debug, Default)]
pub struct ServeOptions {
    /// Address to bind; `127.0.0.1:0` when absent.
    pub addr: Option<SocketAddr>,
    /// A file every record is appended to as a JSON line.
    pub record_file: Option<std::path::PathBuf>,
}

impl MockServer {
    /// Starts a server on `127.0.0.1:0` on the current tokio runtime.
    pub async fn start(config: MockConfig) -> Result<Self, MockError> {
        Self::start_with(config, ServeOptions::default()).await
    }

    /// Starts a server with an address and a record file on the current tokio runtime.
    pub async fn start_with(config: MockConfig, options: ServeOptions) -> Result<Self, MockError> {
        let (state, listener) = Self::bind(config, options).await?;
        let addr = listener.local_addr().map_err(MockError::Bind)?;
        let (tx, rx) = oneshot::channel::<()>();
        let app = router(state.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = rx.await;
                })
                .await;
        });
        Ok(Self {
            addr,
            state,
            shutdown: Some(tx),
            thread: None,
        })
    }

    /// Starts a server on its own thread and runtime, for callers without a runtime.
    pub fn start_in_thread(config: MockConfig) -> Result<Self, MockError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(MockError::Bind)?;
        let (state, listener) = runtime.block_on(Self::bind(config, ServeOptions::default()))?;
        let addr = listener.local_addr().map_err(MockError::Bind)?;
        let (tx, rx) = oneshot::channel::<()>();
        let app = router(state.clone());
        let thread = std::thread::spawn(move || {
            runtime.block_on(async move {
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async move {
                        let _ = rx.await;
                    })
                    .await;
            });
        });
        Ok(Self {
            addr,
            state,
            shutdown: Some(tx),
            thread: Some(thread),
        })
    }

    async fn bind(
        config: MockConfig,
        options: ServeOptions,
    ) -> Result<(Arc<State>, tokio::net::TcpListener), MockError> {
        let record_file = match &options.record_file {
            Some(path) => Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|source| MockError::RecordFile {
                        path: path.clone(),
                        source,
                    })?,
            ),
            None => None,
        };
        Tokenizer::warm_up();
        let addr = options
            .addr
            .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(MockError::Bind)?;
        Ok((Arc::new(State::new(config, record_file)), listener))
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT` (no trailing slash, no `/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The URL of `path` on this server.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Every request recorded so far, oldest first.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.state.requests()
    }

    /// Gemini explicit-cache storage billed so far, in token-hours.
    pub fn cached_content_storage_token_hours(&self) -> f64 {
        lock(&self.state.cached_contents).storage_token_hours()
    }

    /// Tokens of every Gemini explicit cache created so far (each create is billed at the
    /// input price).
    pub fn cached_content_created_tokens(&self) -> u64 {
        lock(&self.state.cached_contents).created_tokens()
    }

    /// Moves the virtual clock forward; returns the new time in milliseconds.
    pub fn advance_clock(&self, by: Duration) -> u64 {
        self.state.clock.advance(by)
    }

    /// Queues a fault for the next matching request(s).
    pub fn push_fault(&self, fault: Fault) {
        self.state.push_fault(fault);
    }

    /// Replaces the scenario the scripted model plays.
    pub fn load_scenario(&self, scenario: Scenario) {
        self.state.load_scenario(scenario);
    }

    /// Forgets cache entries, records, queued faults and stored responses.
    pub fn reset(&self) {
        self.state.reset();
    }

    /// Closes every open Responses WebSocket at its next message (it is dropped unanswered),
    /// as a network failure or a server restart would.
    pub fn close_sockets(&self) {
        self.state.socket_epoch.fetch_add(1, Ordering::Relaxed);
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
