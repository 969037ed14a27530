//! Child agents (the `task` tool): each delegation call's progress updates and result kept as
//! a row (description, status, requests, cost) — the running ones shown above the editor, the
//! cost of all of them in the footer beside the session's own — and `/agents`, which lists
//! every child of the session and opens the one chosen read-only in place of the transcript.

use std::path::PathBuf;

use serde_json::Value;
use strata_host::subagents::STATUS_RUNNING;
use strata_session::SpawnDecision;

use super::{App, Effect, Level};
use crate::children::{ChildView, Listed};
use crate::picker::{Picker, PickerItem, PickerKind};

/// Where a child stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildStatus {
    /// Working.
    Running,
    /// Ended; the parent got its answer.
    Done,
    /// Ended; the parent got an error (budget, abort, failure).
    Failed,
}

impl ChildStatus {
    /// The word the progress updates use (`strata_host::subagents::STATUS_*`).
    fn parse(word: &str) -> Self {
        match word {
            strata_host::subagents::STATUS_DONE => Self::Done,
            strata_host::subagents::STATUS_FAILED => Self::Failed,
            _ => Self::Running,
        }
    }

    /// `running`, `done` or `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => STATUS_RUNNING,
            Self::Done => strata_host::subagents::STATUS_DONE,
            Self::Failed => strata_host::subagents::STATUS_FAILED,
        }
    }
}

/// A child seen in this session since the UI opened it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildRow {
    /// The delegation call's id.
    pub call_id: String,
    /// The task's short description.
    pub description: String,
    /// `fork` or `fresh`.
    pub start: String,
    /// Where it stands.
    pub status: ChildStatus,
    /// What it is doing (`turn 2 · bash`), or how it ended.
    pub activity: String,
    /// Requests answered so far.
    pub requests: u64,
    /// Dollars so far.
    pub cost: f64,
    /// Its session file.
    pub session: PathBuf,
    /// Its result arrived: its cost is in the stats' children total.
    counted: bool,
}

/// The children the UI knows of: rows in the order they started, and where the current run's
/// start (the status area shows those while the run goes on).
#[derive(Debug, Default)]
pub struct Children {
    rows: Vec<ChildRow>,
    run_from: usize,
    /// The child shown in place of the transcript.
    pub viewing: Option<ChildView>,
}

impl Children {
    /// The rows of the run in progress.
    pub fn of_this_run(&self) -> &[ChildRow] {
        self.rows.get(self.run_from..).unwrap_or_default()
    }

    /// What the children without a result yet have cost so far (the others are in
    /// [`crate::stats::Stats::children_cost`]).
    pub fn running_cost(&self) -> f64 {
        self.rows
            .iter()
            .filter(|row| !row.counted)
            .map(|row| row.cost)
            .sum()
    }

    fn row(&mut self, call_id: &str) -> Option<&mut ChildRow> {
        self.rows.iter_mut().find(|row| row.call_id == call_id)
    }
}

impl App {
    /// A run starts: its children are the ones the status area shows.
    pub(super) fn children_run_started(&mut self) {
        self.children.run_from = self.children.rows.len();
    }

    /// A tool's progress update: a delegation call's (`details.subagent`) updates its child's
    /// row, created at the first.
    pub(super) fn child_progress(&mut self, call_id: &str, details: &Value) {
        let Some(subagent) = details.get("subagent") else {
            return;
        };
        let text = |key: &str| subagent[key].as_str().unwrap_or_default().to_owned();
        let status = ChildStatus::parse(&text("status"));
        let requests = subagent["requests"].as_u64().unwrap_or(0);
        let cost = subagent["usage"]["cost"].as_f64().unwrap_or(0.0);
        let viewing = self.children.viewing.as_ref();
        let viewed = viewing.is_some_and(|v| v.session.to_string_lossy() == text("session"));
        match self.children.row(call_id) {
            Some(row) => {
                // A result may have arrived first; it has the last word.
                if row.status == ChildStatus::Running {
                    row.status = status;
                    row.activity = text("activity");
                    row.requests = requests;
                    row.cost = cost;
                }
            }
            None => self.children.rows.push(ChildRow {
                call_id: call_id.to_owned(),
                description: text("description"),
                start: text("start"),
                status,
                activity: text("activity"),
                requests,
                cost,
                session: PathBuf::from(text("session")),
                counted: false,
            }),
        }
        // The child being viewed grew: read it again.
        if viewed {
            self.effects
                .push(Effect::OpenChild(PathBuf::from(text("session"))));
        }
    }

    /// A tool result: a delegation result ends its child's row, and its cost joins the
    /// children's total.
    pub(super) fn child_result(&mut self, call_id: &str, details: Option<&Value>, failed: bool) {
        let Some(decision) = SpawnDecision::of_result(call_id, details) else {
            return;
        };
        self.stats.children_cost += decision.cost;
        let subagent = details.map(|d| &d["subagent"]);
        let requests = subagent.and_then(|s| s["requests"].as_u64()).unwrap_or(0);
        // A background child's result says only that it started: its updates go on.
        let running = subagent.is_some_and(|s| s["status"] == STATUS_RUNNING);
        let status = match (running, failed) {
            (true, _) => ChildStatus::Running,
            (false, true) => ChildStatus::Failed,
            (false, false) => ChildStatus::Done,
        };
        match self.children.row(call_id) {
            Some(row) => {
                (row.status, row.activity) = (status, decision.outcome);
                row.cost = decision.cost.max(row.cost);
                row.requests = row.requests.max(requests);
                row.counted = !running;
            }
            None => self.children.rows.push(ChildRow {
                call_id: call_id.to_owned(),
                description: decision.description,
                start: decision.start,
                status,
                activity: decision.outcome,
                requests,
                cost: decision.cost,
                session: decision.session,
                counted: !running,
            }),
        }
    }

    /// A session is attached: the children seen belonged to the one before.
    pub(super) fn children_reset(&mut self) {
        self.children = Children::default();
    }

    /// `/agents`: asks for the session's children (read by the UI loop: [`Effect::ListChildren`]).
    pub(super) fn agents_command(&mut self) {
        if self.status.session_file.as_os_str().is_empty() {
            self.notice(Level::Info, "no session is open");
            return;
        }
        self.effects
            .push(Effect::ListChildren(self.status.session_file.clone()));
    }

    /// The session's children, read: a picker, each row saying where the child stands.
    pub fn children_listed(&mut self, listed: Vec<Listed>) {
        if listed.is_empty() {
            self.notice(
                Level::Info,
                "this session has delegated nothing yet (the `task` tool starts child agents)",
            );
            return;
        }
        let items = listed
            .iter()
            .map(|listed| {
                let child = &listed.child;
                let live = self
                    .children
                    .rows
                    .iter()
                    .find(|row| row.session == child.summary.path);
                let (status, cost) = match (live, &listed.ended) {
                    (Some(row), _) => (row.status.as_str(), row.cost),
                    (None, Some(ended)) if ended.outcome == "stop" => ("done", ended.cost),
                    (None, Some(ended)) => ("failed", ended.cost),
                    (None, None) => ("no result", 0.0),
                };
                PickerItem::new(
                    format!(
                        "{}{}",
                        "  ".repeat(child.depth.saturating_sub(1) as usize),
                        child.title()
                    ),
                    format!(
                        "{status} · {} msgs · {} · {}",
                        child.summary.message_count,
                        crate::stats::dollars(cost),
                        child.summary.path.display()
                    ),
                    child.summary.path.display().to_string(),
                )
            })
            .collect();
        self.picker = Some(Picker::new(
            PickerKind::Child,
            "Child agents (Enter: view read-only, Esc: close)",
            items,
        ));
    }

    /// A child was chosen (in `/agents` or `/tree`): read it for viewing.
    pub(super) fn child_chosen(&mut self, path: &str) {
        self.effects.push(Effect::OpenChild(PathBuf::from(path)));
    }

    /// A child's session, read: shown in place of the transcript until Esc.
    pub fn show_child(&mut self, view: Result<ChildView, String>) {
        match view {
            Ok(view) => {
                if self.children.viewing.is_none() {
                    self.scroll = 0;
                }
                self.children.viewing = Some(view);
            }
            Err(error) => self.notice(Level::Error, error),
        }
    }

    /// Back from a child's view to the session's transcript; `false` when none was shown.
    pub(super) fn close_child_view(&mut self) -> bool {
        let was = self.children.viewing.take().is_some();
        if was {
            self.scroll = 0;
        }
        was
    }

    /// The items the transcript area shows: the viewed child's, else the session's.
    pub fn shown_items(&self) -> &[super::Item] {
        match &self.children.viewing {
            Some(view) => &view.items,
            None => &self.items,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::time::Instant;

    use ratatui::crossterm::event::KeyCode;
    use serde_json::json;
    use strata_agent::AgentEvent;

    use super::super::{App, Effect};
    use crate::app::Item;
    use crate::picker::PickerKind;
    use crate::testing::{app, key, message_end, screen, type_text, usage};
    use crate::worker::{Reply, tree_rows};
    use crate::{children, stats, view};

    /// The checked-in parent with one forked child, copied (listing writes an index).
    fn delegation() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/delegation");
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("parent.subagents")).unwrap();
        for file in ["parent.jsonl", "parent.subagents/1000_call_1.jsonl"] {
            std::fs::copy(from.join(file), dir.path().join(file)).unwrap();
        }
        let parent = dir.path().join("parent.jsonl");
        let child = dir.path().join("parent.subagents/1000_call_1.jsonl");
        (dir, parent, child)
    }

    fn progress(status: &str, requests: u64, cost: f64) -> AgentEvent {
        AgentEvent::ToolUpdate {
            id: "call_1".into(),
            text: "child (fork) make a file: …".into(),
            details: json!({"subagent": {
                "session": "/s/parent.subagents/1_call_1.jsonl", "description": "make a file",
                "start": "fork", "status": status, "activity": "turn 1 · bash",
                "requests": requests, "usage": {"cost": cost}
            }}),
        }
    }

    fn footer(app: &App) -> String {
        view::footer_lines(app, 400)
            .iter()
            .flat_map(|line| line.spans.iter().map(|span| span.content.to_string()))
            .collect()
    }

    fn enter(app: &mut App) {
        app.on_key(key(KeyCode::Enter), Instant::now());
    }

    #[test]
    fn the_footer_adds_the_childrens_cost_and_says_it_apart_counting_each_child_once() {
        let mut app = app();
        app.on_agent(AgentEvent::AgentStart);
        app.on_agent(usage(2_000, 0, 10_000, 100));
        let own = app.stats.cost;
        assert!(!footer(&app).contains("children"), "{}", footer(&app));
        app.on_agent(progress("running", 1, 0.004));
        let expected = format!(
            "{} (children {})",
            stats::dollars(own + 0.004),
            stats::dollars(0.004)
        );
        assert!(footer(&app).contains(&expected), "{}", footer(&app));
        // The result's figure replaces the updates' (the last update and the result both
        // describe the ended child: counted once).
        app.on_agent(progress("done", 2, 0.005));
        let mut result = crate::testing::tool_result("call_1", "task", "answer", false);
        result["details"] = json!({"subagent": {
            "session": "/s/parent.subagents/1_call_1.jsonl", "description": "make a file",
            "start": "fork", "reason": "fork: cheaper", "outcome": "stop",
            "requests": 2, "usage": {"cost": 0.005}
        }});
        app.on_agent(message_end(result));
        let expected = format!(
            "{} (children {})",
            stats::dollars(own + 0.005),
            stats::dollars(0.005)
        );
        assert!(footer(&app).contains(&expected), "{}", footer(&app));
        // The summary left on the terminal says it the same way.
        let summary = app.exit_summary(false).unwrap_or_default();
        assert!(
            summary.contains(&format!("${:.4} (children $0.0050)", own + 0.005)),
            "{summary}"
        );
    }

    #[test]
    fn a_running_child_is_shown_with_its_status_requests_and_cost() {
        let mut app = app();
        app.on_agent(AgentEvent::AgentStart);
        app.on_agent(progress("running", 1, 0.004));
        let shown = screen(&app, 120, 20);
        assert!(
            shown.contains(
                "⑂ child (fork) make a file: running · turn 1 · bash · 1 requests · $0.0040"
            ),
            "{shown}"
        );
        app.on_agent(progress("failed", 3, 0.02));
        let shown = screen(&app, 120, 20);
        assert!(
            shown.contains("make a file: failed · turn 1 · bash · 3 requests · $0.020"),
            "{shown}"
        );
        // The next run starts with none.
        app.on_agent(AgentEvent::AgentEnd {
            reason: "stop".into(),
        });
        app.on_agent(AgentEvent::AgentStart);
        assert!(!screen(&app, 120, 20).contains("make a file"));
    }

    #[test]
    fn a_background_childs_result_leaves_it_running_until_its_updates_say_it_ended() {
        let mut app = app();
        app.on_agent(AgentEvent::AgentStart);
        let mut result = crate::testing::tool_result("call_1", "task", "started", false);
        result["details"] = json!({"subagent": {"status": "running", "reason": "fork: cheaper",
            "outcome": "background", "description": "make a file", "start": "fork"}});
        app.on_agent(message_end(result));
        let status = |app: &App| app.children.of_this_run()[0].status;
        assert_eq!(status(&app), super::ChildStatus::Running);
        app.on_agent(progress("done", 2, 0.005));
        assert_eq!(status(&app), super::ChildStatus::Done);
    }

    #[test]
    fn agents_lists_the_sessions_children_and_opens_one_read_only_until_esc() {
        let (_dir, parent, child) = delegation();
        let mut app = app();
        app.status.session_file = parent.clone();
        app.items
            .push(Item::Assistant("the parent's own transcript".into()));
        type_text(&mut app, "/agents");
        enter(&mut app);
        assert_eq!(
            app.take_effects(),
            vec![Effect::ListChildren(parent.clone())]
        );
        app.children_listed(children::list(&parent));
        let picker = app.picker.as_ref().expect("a picker of children");
        assert_eq!(picker.kind, PickerKind::Child);
        assert_eq!(picker.items.len(), 1);
        assert_eq!(picker.items[0].label, "child (fork): make a file");
        assert!(
            picker.items[0]
                .detail
                .starts_with("done · 5 msgs · $0.0042 · "),
            "{}",
            picker.items[0].detail
        );
        enter(&mut app);
        assert_eq!(app.take_effects(), vec![Effect::OpenChild(child.clone())]);
        app.show_child(children::open(&child));
        let shown = screen(&app, 100, 24);
        assert!(shown.contains("Task: make a file"), "{shown}");
        assert!(
            shown.contains("viewing child (fork): make a file (read-only)"),
            "{shown}"
        );
        // The fork's copy of the parent's conversation is the parent's, not shown again.
        assert!(!shown.contains("please delegate the file"), "{shown}");
        assert!(!shown.contains("the parent's own transcript"), "{shown}");
        app.on_key(key(KeyCode::Esc), Instant::now());
        let shown = screen(&app, 100, 24);
        assert!(shown.contains("the parent's own transcript"), "{shown}");
        assert!(!shown.contains("viewing child"), "{shown}");
    }

    #[test]
    fn tree_lists_a_child_under_its_spawning_entry_and_opens_it() {
        let (_dir, parent, child) = delegation();
        let session = strata_session::Session::open(&parent).unwrap().session;
        let rows = tree_rows(&session);
        let at = rows
            .iter()
            .position(|row| row.child.is_some())
            .expect("a child row");
        assert_eq!(rows[at].child.as_deref(), Some(child.as_path()));
        assert!(
            rows[at].text.ends_with("↳ child (fork): make a file"),
            "{}",
            rows[at].text
        );
        assert_eq!(rows[at - 1].id.as_str(), "a1", "under the spawning entry");
        let mut app = app();
        app.on_reply(Reply::Tree(rows));
        let picker = app.picker.as_mut().expect("the tree");
        picker.select_key(&format!("child:{}", child.display()));
        enter(&mut app);
        assert_eq!(app.take_effects(), vec![Effect::OpenChild(child)]);
    }

    #[test]
    fn a_resumed_session_counts_its_ended_childrens_cost() {
        let (_dir, parent, _child) = delegation();
        let session = strata_session::Session::open(&parent).unwrap().session;
        let stats = crate::worker::stats_of(&session);
        assert_eq!(stats.children_cost, 0.0042);
    }

    #[test]
    fn context_says_how_each_child_on_the_branch_started_and_why() {
        let (_dir, parent, _child) = delegation();
        let session = strata_session::Session::open(&parent).unwrap().session;
        let leaf = session.leaf().map(|id| id.as_str().to_owned());
        let lines = strata_runtime::read_model::delegation_lines(session.tree(), leaf.as_deref());
        assert_eq!(
            lines[1..],
            [
                "children spawned on this branch (how each started, and why):".to_owned(),
                "  make a file [fork, stop, $0.0042]: fork: $0.0072 against fresh $0.0174 over \
                 ~3 requests; re-reading the parent's 8,000-token prefix (warm (20s old of \
                 300s)) at $0.300/Mtok costs less than writing a 4,000-token prefix at \
                 $3.750/Mtok"
                    .to_owned(),
            ]
        );
        // Before the delegation there is nothing to say.
        assert!(
            strata_runtime::read_model::delegation_lines(session.tree(), Some("u1")).is_empty()
        );
    }
}
