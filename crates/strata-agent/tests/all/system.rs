//! The system prompt is stored once and patched; resuming sends the same bytes.

use strata_agent::AgentEvent;
use strata_provider::{Request, Role};
use strata_session::{Entry, Session, WriteOptions};
use strata_tools::ToolSet;

use crate::scripted::{Scripted, Turn, agent, json_of};

fn system_entries(session: &Session) -> Vec<strata_session::SystemEntry> {
    assert!(
        !session
            .tree()
            .iter()
            .any(|e| e.kind() == strata_session::EntryKind::System),
        "strata writes Pi 1.x system messages, not `system` entries"
    );
    session
        .tree()
        .iter()
        .filter_map(|e| match e.entry().unwrap() {
            // The patch a Pi 1.x system message carries, in the shape these tests compare.
            Entry::Message(m) => match &*m.message {
                strata_session::AgentMessage::System(system) => Some(strata_session::SystemEntry {
                    base: m.base,
                    sections: system
                        .section_changes()
                        .filter_map(|(name, text)| Some((name.to_owned(), text?)))
                        .collect(),
                    tools_added: system.tools_added().to_vec(),
                    tools_removed: system.tools_removed().map(str::to_owned).collect(),
                    extra: Default::default(),
                }),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

fn chapters(request: &Request) -> (String, String) {
    (json_of(&request.tools), json_of(&request.system))
}

#[tokio::test]
async fn snapshot_once_then_nothing_while_nothing_changes() {
    let dir = tempfile::tempdir().unwrap();
    let session =
        Session::create(dir.path().join("s.jsonl"), "/x", WriteOptions::default()).unwrap();
    let provider = Scripted::new(vec![Turn::Text("one"), Turn::Text("two")]);
    let mut agent = agent(session, provider.clone(), dir.path(), None);
    agent.prompt("first").await.unwrap();
    agent.prompt("second").await.unwrap();
    let systems = system_entries(agent.session());
    assert_eq!(systems.len(), 1, "one snapshot, no patch");
    assert_eq!(systems[0].tools_added.len(), 4);
    let keys: Vec<&str> = systems[0].sections.keys().map(String::as_str).collect();
    assert_eq!(keys, ["cwd", "intro", "rules", "tools"]);
    let requests = provider.requests();
    assert_eq!(chapters(&requests[0]), chapters(&requests[1]));
    assert!(!requests[0].system.is_empty());
}

#[tokio::test]
async fn disabling_a_tool_is_one_patch_and_the_tools_chapter_keeps_its_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let session =
        Session::create(dir.path().join("s.jsonl"), "/x", WriteOptions::default()).unwrap();
    let provider = Scripted::new(vec![Turn::Text("one"), Turn::Text("two")]);
    let mut agent = agent(session, provider.clone(), dir.path(), None);
    let mut events = agent.subscribe();
    agent.prompt("first").await.unwrap();
    agent.set_tools(ToolSet::builtins(&["read", "bash", "edit"]));
    agent.prompt("second").await.unwrap();

    let systems = system_entries(agent.session());
    assert_eq!(systems.len(), 2);
    assert_eq!(systems[1].tools_removed, ["write"]);
    let patched: Vec<&str> = systems[1].sections.keys().map(String::as_str).collect();
    assert_eq!(
        patched,
        ["rules", "tools"],
        "only the sections that mention write"
    );
    let requests = provider.requests();
    assert_eq!(
        json_of(&requests[0].tools),
        json_of(&requests[1].tools),
        "write stays in the array"
    );
    assert_eq!(
        json_of(&requests[0].system),
        json_of(&requests[1].system),
        "the patch is not folded in"
    );
    // The change is said in the messages chapter, after the user message.
    let roles: Vec<Role> = requests[1].messages.iter().map(|m| m.role).collect();
    assert!(roles.contains(&Role::System), "{roles:?}");
    let mut saw = false;
    while let Ok(event) = events.try_recv() {
        if let AgentEvent::SystemUpdate {
            snapshot: false,
            tools_removed,
            ..
        } = event
        {
            assert_eq!(tools_removed, ["write"]);
            saw = true;
        }
    }
    assert!(saw);
}

#[tokio::test]
async fn resume_after_agents_md_changed_sends_the_same_prefix_and_a_patch_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(project.join("AGENTS.md"), "Use tabs.").unwrap();
    let path = dir.path().join("s.jsonl");
    let session = Session::create(&path, "/x", WriteOptions::default()).unwrap();
    let provider = Scripted::new(vec![Turn::Text("one"), Turn::Text("two")]);
    let mut first = agent(session, provider.clone(), &project, None);
    first.prompt("first").await.unwrap();
    drop(first);

    std::fs::write(project.join("AGENTS.md"), "Use spaces.").unwrap();
    let reopened = Session::open_writable(&path, WriteOptions::default())
        .unwrap()
        .session;
    let mut second = agent(reopened, provider.clone(), &project, None);
    second.prompt("second").await.unwrap();

    let requests = provider.requests();
    assert_eq!(
        chapters(&requests[0]),
        chapters(&requests[1]),
        "tools and system chapters unchanged"
    );
    let systems = system_entries(second.session());
    assert_eq!(systems.len(), 2);
    let patched: Vec<&str> = systems[1].sections.keys().map(String::as_str).collect();
    assert_eq!(patched, ["docs"]);
    assert!(systems[1].sections["docs"].contains("Use spaces."));
    let last_system = requests[1]
        .messages
        .iter()
        .rposition(|m| m.role == Role::System)
        .unwrap();
    assert!(
        requests[1].messages[last_system]
            .text()
            .contains("Use spaces.")
            || format!("{:?}", requests[1].messages[last_system]).contains("Use spaces.")
    );
    // Everything before the patch is the first request's messages plus its answer and the new user message.
    let first_bytes = json_of(&requests[0].messages);
    let prefix = &first_bytes[..first_bytes.len() - 1];
    assert!(json_of(&requests[1].messages).starts_with(prefix));
}
