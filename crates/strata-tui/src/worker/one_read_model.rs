//! The TUI's reads and rpc's over one session give the same transcript, tree and stats: both
//! views translate the runtime's one read model.

use serde_json::{Value, json};
use strata_mock::{MockConfig, MockServer, Scenario};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

use super::*;

const TURNS: &str = "[[turn]]\ntext = \"Reading it.\"\n[[turn.tool_call]]\ntool = \"read\"\nargs = { path = \"a.txt\" }\n[[turn]]\ntext = \"It says hi.\"\n[[turn]]\ntext = \"Second answer.\"\n";

#[tokio::test]
async fn the_tui_and_rpc_read_the_same_transcript_tree_and_stats() {
    let server = MockServer::start(MockConfig::new()).await.expect("mock");
    server.load_scenario(Scenario::from_toml(TURNS, "t").expect("scenario"));
    let catalog = strata_provider::Catalog::builtin().expect("catalog");
    let host = strata_rpc::EndpointHost::new(catalog, "anthropic", server.base_url(), "k");
    let route = host
        .route_to("anthropic", "claude-sonnet-4-5", None)
        .expect("route");
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("a.txt"), "hi\n").expect("writing");
    let cwd = dir.path().display().to_string();
    let options = strata_session::WriteOptions::default();
    let session = Session::create(dir.path().join("s.jsonl"), &cwd, options).expect("session");
    let tools = strata_tools::ToolSet::default_set();
    let config = route.agent_config(dir.path());
    let agent = Agent::new(session, route.provider.clone(), tools, config);

    // The TUI's side: its worker's reads over a runtime the session is driven through,
    // to a tree that forks at the first answer.
    let control = agent.control();
    let (handle, events, task) = strata_runtime::spawn(agent, Arc::new(strata_runtime::NoRoutes));
    let (ui, mut replies) = tokio::sync::mpsc::unbounded_channel();
    let (last_divergence, compacted, labelled, models) = (None, None, None, Vec::new());
    let mut live = Live {
        handle,
        events,
        ui,
        models,
        last_divergence,
        compacted,
        labelled,
        control,
        next_query: 0,
    };
    let prompt = |text: &str| vec![Op::Prompt(UserInput::text(text))];
    live.ops(prompt("read a.txt")).await.expect("first prompt");
    let target = live.state(Vec::new()).await.expect("state").leaf;
    live.ops(prompt("two")).await.expect("second prompt");
    let bash = strata_runtime::BashRecord {
        command: "echo hi".into(),
        exit_code: Some(0),
        ..Default::default()
    };
    let navigate = Op::Navigate {
        target,
        summarize: false,
        instructions: None,
    };
    live.ops(vec![navigate, Op::RecordBash(Box::new(bash))])
        .await
        .expect("moving");
    live.ops(prompt("three")).await.expect("third prompt");
    live.attach().await.expect("attaching");
    let attached = loop {
        if let Some(UiEvent::Reply(Reply::Attached(attached))) = replies.recv().await {
            break attached;
        }
    };
    let Answer::Tree { rows } = live.read(Vec::new(), Query::Tree).await.expect("tree") else {
        panic!("no tree");
    };
    let rows = picker_rows(rows);
    live.handle.send(Op::Shutdown).expect("shutdown");
    let agent = task.await.expect("the runtime");

    // rpc's side: the same session served to Pi's protocol.
    let (mut commands, input) = tokio::io::duplex(1 << 16);
    let (output, client) = tokio::io::duplex(1 << 20);
    let (retries, options) = (Default::default(), Default::default());
    let serving = tokio::spawn(strata_rpc::serve(
        input, output, agent, retries, host, options,
    ));
    let mut lines = BufReader::new(client).lines();
    let mut answers = Vec::new();
    for command in ["get_messages", "get_session_stats", "get_tree"] {
        let line = format!("{}\n", json!({"type": command}));
        commands.write_all(line.as_bytes()).await.expect("sending");
        while let Some(line) = lines.next_line().await.expect("reading") {
            let value: Value = serde_json::from_str(&line).expect("JSON");
            if value["type"] == "response" {
                answers.push(value["data"].clone());
                break;
            }
        }
    }
    drop(commands);
    serving.await.expect("serving").expect("served");

    // Transcript: the user and answer texts of the branch, in order.
    let tui_texts: Vec<&str> = (attached.transcript.items.iter())
        .filter_map(|item| match item {
            Item::User(text) | Item::Assistant(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let rpc_texts: Vec<&str> = (answers[0]["messages"].as_array().expect("messages").iter())
        .filter(|m| m["role"] == "user" || m["role"] == "assistant")
        .flat_map(|m| match m["content"].as_str() {
            Some(text) => vec![text],
            None => (m["content"].as_array().into_iter().flatten())
                .filter_map(|b| b["text"].as_str())
                .collect(),
        })
        .collect();
    // The mock answers by the answers in the request: the new branch holds two, as the
    // second prompt's did.
    assert_eq!(
        tui_texts,
        [
            "read a.txt",
            "Reading it.",
            "It says hi.",
            "three",
            "Second answer."
        ]
    );
    assert_eq!(tui_texts, rpc_texts);
    let bash = |item: &Item| matches!(item, Item::Tool(tool) if tool.arguments == "echo hi");
    assert!(
        attached.transcript.items.iter().any(bash),
        "the recorded command"
    );

    // Stats: every request the file records, the same figures.
    let (stats, tokens) = (&answers[1], &answers[1]["tokens"]);
    let prompt: u64 = ["input", "cacheRead", "cacheWrite"]
        .iter()
        .filter_map(|k| tokens[*k].as_u64())
        .sum();
    assert_eq!(attached.stats.requests, 4);
    assert_eq!(attached.stats.prompt_tokens, prompt);
    assert_eq!(
        Some(attached.stats.cache_read),
        tokens["cacheRead"].as_u64()
    );
    assert_eq!(Some(attached.stats.cost), stats["cost"].as_f64());

    // Tree: the rows the TUI lists are the rpc tree's messages, with the same parents.
    let mut nodes = answers[2]["tree"].as_array().expect("tree").clone();
    let mut rpc_rows = Vec::new();
    while let Some(node) = nodes.pop() {
        let entry = &node["entry"];
        if entry["type"] == "message" && entry["message"]["role"] != "toolResult" {
            rpc_rows.push((entry["id"].to_string(), entry["parentId"].to_string()));
        }
        nodes.extend(node["children"].as_array().into_iter().flatten().cloned());
    }
    let quoted = |id: Option<&EntryId>| id.map_or("null".to_owned(), |id| format!("\"{id}\""));
    let mut tui_rows: Vec<(String, String)> = rows
        .iter()
        .map(|row| (quoted(Some(&row.id)), quoted(row.parent.as_ref())))
        .collect();
    rpc_rows.sort();
    tui_rows.sort();
    // The system prompt, three prompts, four answers and the command.
    assert_eq!(tui_rows.len(), 9, "{tui_rows:?}");
    assert_eq!(tui_rows, rpc_rows);
    assert_eq!(rows.iter().filter(|row| row.leaf).count(), 1);
}
