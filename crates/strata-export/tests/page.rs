//! The page of a real Pi 1.x session (compactions, system changes) and of a file with a torn
//! line: every user text is there escaped, the leaf is named, the totals are the accounting's.

use std::path::PathBuf;

use strata_session::{AgentMessage, Entry, Session};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/pi1")
        .join(name)
}

#[test]
fn a_pi_session_becomes_one_page_with_every_user_text_and_the_leaf() {
    let opened = Session::open(fixture("system-and-compactions.jsonl")).unwrap();
    let page = strata_export::page(&opened.session, &opened.diagnostics);
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(
        !page.contains("<script src") && !page.contains("<link "),
        "nothing is fetched"
    );
    let tree = opened.session.tree();
    let mut users = 0;
    for entry in tree.iter() {
        if let Ok(Entry::Message(message)) = entry.entry()
            && let AgentMessage::User(user) = &*message.message
        {
            let text = match &user.content {
                strata_session::MessageContent::Text(text) => text.clone(),
                strata_session::MessageContent::Blocks(_) => continue,
            };
            users += 1;
            assert!(
                page.contains(&strata_export::escape(&text)),
                "the user text {text:?} is on the page"
            );
        }
    }
    assert!(users > 0);
    let leaf = tree.leaf().unwrap();
    assert!(page.contains(&format!(
        "Current leaf: <a href=\"#entry-{leaf}\">{leaf}</a>"
    )));
    let totals = strata_accounting::Totals::of(&strata_accounting::records(tree));
    let requests = format!(
        "{} — input {} · output {} · cache read {} · cache write {} · ${:.4}",
        totals.requests,
        totals.usage.input,
        totals.usage.output,
        totals.usage.cache_read,
        totals.usage.cache_write(),
        totals.cost
    );
    assert!(totals.requests > 0);
    assert!(
        page.contains(&strata_export::escape(&requests)),
        "{requests}"
    );
}

#[test]
fn a_torn_line_is_reported_on_the_page_not_fatal() {
    let text = std::fs::read_to_string(fixture("system-and-compactions.jsonl")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("torn.jsonl");
    std::fs::write(&file, format!("{text}{{\"type\":\"message\",\"id\":\"tor")).unwrap();
    let opened = Session::open(&file).unwrap();
    assert!(!opened.diagnostics.is_empty());
    let page = strata_export::page(&opened.session, &opened.diagnostics);
    assert!(
        page.contains("damaged line(s) skipped or repaired"),
        "the diagnostics are shown"
    );
}
