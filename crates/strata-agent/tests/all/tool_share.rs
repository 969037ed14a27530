//! A tool whose definition can never fit (issue 42, item 5): refused at declaration with a
//! message naming its server, and withdrawn from a session that already declared it, with
//! the session's lines kept.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use strata_agent::AgentEvent;
use strata_session::{Session, WriteOptions};
use strata_tools::{Tool, ToolCall, ToolContext, ToolOutput, ToolSet, UpdateSender};

use strata_compaction::CompactionSettings;

use crate::scripted::{Scripted, Turn, agent, agent_with, json_of, model};

/// An MCP server's tool with a large description (1 MB by default: about 250k tokens, more
/// than the 200k window of the test model).
struct Huge {
    description: String,
}

#[async_trait]
impl Tool for Huge {
    fn name(&self) -> &str {
        "mcp__bloated__huge"
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    async fn execute(
        &self,
        _call: ToolCall,
        _ctx: &ToolContext,
        _updates: Option<UpdateSender>,
    ) -> ToolOutput {
        ToolOutput::text("never")
    }
}

fn huge() -> Arc<dyn Tool> {
    Arc::new(Huge {
        description: "bloat ".repeat(170_000),
    })
}

#[tokio::test(start_paused = true)]
async fn a_tool_too_large_for_the_window_is_not_declared_and_its_server_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let session = Session::create(&path, "/x", WriteOptions::default()).unwrap();
    let provider = Scripted::new(vec![Turn::Text("done")]);
    let mut agent = agent(session, provider.clone(), dir.path(), None);
    let mut tools = ToolSet::default_set();
    tools.insert(huge());
    agent.set_tools(tools);
    let mut events = agent.subscribe();
    assert_eq!(agent.prompt("hi").await.unwrap().reason, "stop");

    let request = &provider.requests()[0];
    assert!(request.tools.iter().all(|t| t.name != "mcp__bloated__huge"));
    assert!(request.tools.iter().any(|t| t.name == "read"));
    assert!(!json_of(request).contains("bloat bloat"));
    assert!(
        !std::fs::read_to_string(&path)
            .unwrap()
            .contains("bloat bloat")
    );
    let refused = agent.refused_tools();
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].server.as_deref(), Some("bloated"));
    let mut said = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let AgentEvent::SystemUpdate { tools_refused, .. } = event {
            said.extend(tools_refused);
        }
    }
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].contains("MCP server \"bloated\""), "{said:?}");
    assert!(
        said[0].contains("add \"huge\" to deny_tools in [mcp.servers.bloated]"),
        "{said:?}"
    );
}

/// `[compaction] max_tool_share` from the config sets the share: a definition of about 60k
/// tokens (0.3 of the window) is refused at the default 0.25 and declared at 0.5.
#[tokio::test(start_paused = true)]
async fn the_share_comes_from_compaction_max_tool_share() {
    let sizable = || -> Arc<dyn Tool> {
        Arc::new(Huge {
            description: "bloat ".repeat(40_000),
        })
    };
    let mut declared = Vec::new();
    for share in [None, Some(0.5)] {
        let dir = tempfile::tempdir().unwrap();
        let session =
            Session::create(dir.path().join("s.jsonl"), "/x", WriteOptions::default()).unwrap();
        let provider = Scripted::new(vec![Turn::Text("done")]);
        let mut settings = CompactionSettings::default();
        if let Some(share) = share {
            settings.max_tool_share = share;
        }
        let mut agent = agent_with(
            session,
            provider.clone(),
            dir.path(),
            None,
            model(),
            settings,
        );
        let mut tools = ToolSet::default_set();
        tools.insert(sizable());
        agent.set_tools(tools);
        assert_eq!(agent.prompt("hi").await.unwrap().reason, "stop");
        let request = &provider.requests()[0];
        declared.push(request.tools.iter().any(|t| t.name == "mcp__bloated__huge"));
        assert_eq!(
            agent.refused_tools().is_empty(),
            declared[declared.len() - 1]
        );
    }
    assert_eq!(declared, [false, true]);
}

#[tokio::test(start_paused = true)]
async fn a_session_that_declared_one_withdraws_it_at_the_next_compaction_and_keeps_its_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let provider = Scripted::new(
        ["first", "second", "third", "fourth"]
            .into_iter()
            .map(Turn::Text)
            .collect(),
    );
    provider.set_summary("what happened".into());
    let off = CompactionSettings {
        enabled: false,
        ..CompactionSettings::default()
    };
    // A session from before the limit: the tool went into its ledger.
    {
        let session = Session::create(&path, "/x", WriteOptions::default()).unwrap();
        let mut agent = agent_with(session, provider.clone(), dir.path(), None, model(), off);
        agent.set_tool_share(2.0);
        let mut tools = ToolSet::default_set();
        tools.insert(huge());
        agent.set_tools(tools);
        for prompt in ["one", "two", "three"] {
            let long = format!("{prompt}: {}", "some words of the task ".repeat(100));
            assert_eq!(agent.prompt(long).await.unwrap().reason, "stop");
        }
        assert!(json_of(&provider.requests()[0]).contains("bloat bloat"));
    }
    let before = std::fs::read(&path).unwrap();
    let session = Session::open_writable(&path, WriteOptions::default())
        .unwrap()
        .session;
    let settings = CompactionSettings {
        keep_recent_tokens: 1,
        ..CompactionSettings::default()
    };
    let mut agent = agent_with(
        session,
        provider.clone(),
        dir.path(),
        None,
        model(),
        settings,
    );
    let mut tools = ToolSet::default_set();
    tools.insert(huge());
    agent.set_tools(tools);
    // Withdrawn from the ledger (a `toolsRemoved` patch); the prefix that declared it goes
    // at the compaction, whose checkpoint holds only the tools still live.
    agent.sync_system().unwrap();
    let sent = provider.requests().len();
    assert!(
        agent
            .compact(strata_compaction::CompactionReason::Manual, None)
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(agent.prompt("four").await.unwrap().reason, "stop");
    let requests = provider.requests();
    let request = requests.last().unwrap();
    assert!(request.tools.iter().all(|t| t.name != "mcp__bloated__huge"));
    assert!(
        !json_of(request).contains("bloat bloat"),
        "the definition still rides along"
    );
    // Neither did the summary request carry it (it would not fit the window either).
    for request in &requests[sent..] {
        assert!(
            !json_of(request).contains("bloat bloat"),
            "{}",
            request.model
        );
    }
    // History kept: the file only grew, and still holds the first declaration.
    let after = std::fs::read(&path).unwrap();
    assert!(after.starts_with(&before));
}
