//! Running compactions: split turns, repeated compaction, refusals, usage.

use pretty_assertions::assert_eq;
use serde_json::json;
use strata_compaction::{
    CompactionError, CompactionSettings, SummaryMode, TRANSCRIPT_CACHE_KEY_SUFFIX, compact,
    compact_accounted, compaction_entry, prepare, prompt::SPLIT_TURN_MARKER, recorded_usage,
};
use strata_context::render;
use strata_provider::{BreakpointPosition, ProviderError, StopReason, StreamOptions};
use strata_session::{AgentMessage, Entry};

use crate::support::{
    ScriptedProvider, TestSession, anthropic_capabilities, assistant, compact_session, context,
    last_user_text, model, prepare_due, tool_call, tool_result, user,
};

fn split_turn_session() -> TestSession {
    let mut session = TestSession::new();
    session.push(user("first task: rename the module"));
    session.push(assistant(&"renamed ".repeat(60), 0));
    session.push(user("second task: fix every warning"));
    for call in 0..8 {
        let id = format!("w{call}");
        session.push(tool_call(
            &id,
            "read",
            json!({"path": format!("src/m{call}.rs")}),
            0,
        ));
        session.push(tool_result(&id, "read", &"warning: unused ".repeat(30)));
    }
    session.push(assistant("all warnings fixed", 5000));
    session
}

#[tokio::test]
async fn a_cache_friendly_split_turn_is_one_request_answered_in_two_parts() {
    let session = split_turn_session();
    let settings = CompactionSettings {
        keep_recent_tokens: 400,
        ..CompactionSettings::default()
    };
    let preparation = prepare_due(&session, &settings);
    assert!(preparation.is_split_turn);
    let main = render(&context(&session), &anthropic_capabilities());
    let provider = ScriptedProvider::new(|request| {
        let text = last_user_text(request);
        assert!(text.contains("<turn-start>") && text.contains(SPLIT_TURN_MARKER));
        Ok((
            format!("HISTORY SUMMARY\n\n{SPLIT_TURN_MARKER}\n\nPREFIX SUMMARY"),
            StopReason::EndTurn,
        ))
    });
    let result = compact(
        &provider,
        &model(&main.model),
        &main,
        &preparation,
        &settings,
        &StreamOptions::default(),
    )
    .await
    .expect("compact");
    let merged = "HISTORY SUMMARY\n\n---\n\n**Turn Context (split turn):**\n\nPREFIX SUMMARY";
    assert_eq!(result.summary, format!("{merged}{}", result.details.tags()));
    assert!(result.details.read_files.contains(&"src/m0.rs".to_owned()));
    assert!(result.summary.contains("<read-files>\nsrc/m0.rs\n"));
    assert_eq!(result.mode, SummaryMode::CacheFriendly);
    assert_eq!(
        provider.requests().len(),
        1,
        "one request reads the cache once"
    );
    assert_eq!(result.usage.input, 1000);

    // The request is the session's request plus one instruction, read from cache.
    let request = &provider.requests()[0];
    assert_eq!(request.tools, main.tools);
    assert_eq!(request.system, main.system);
    assert_eq!(request.messages[..main.messages.len()], main.messages[..]);
    assert_eq!(request.messages.len(), main.messages.len() + 1);
    assert_eq!(
        request.max_tokens,
        Some(settings.history_max_tokens() + settings.turn_prefix_max_tokens()),
        "room for both parts"
    );
    let last_assistant = main
        .messages
        .iter()
        .rposition(|m| m.role == strata_provider::Role::Assistant)
        .expect("assistant");
    let message_breakpoints: Vec<_> = request
        .breakpoints
        .iter()
        .filter_map(|b| match b.position {
            BreakpointPosition::Message { index } => Some(index),
            _ => None,
        })
        .collect();
    assert_eq!(
        message_breakpoints,
        [last_assistant - 1],
        "reads what the last turn wrote"
    );
}

#[tokio::test]
async fn a_split_turn_answer_without_the_marker_is_kept_whole() {
    let session = split_turn_session();
    let settings = CompactionSettings {
        keep_recent_tokens: 400,
        ..CompactionSettings::default()
    };
    let provider = ScriptedProvider::answering("ONE SUMMARY OF BOTH");
    let result = compact_session(&session, &settings, &provider)
        .await
        .expect("compact");
    assert_eq!(
        result.summary,
        format!("ONE SUMMARY OF BOTH{}", result.details.tags())
    );
}

#[tokio::test]
async fn transcript_split_turn_summaries_run_concurrently_and_merge() {
    let session = split_turn_session();
    let settings = CompactionSettings {
        keep_recent_tokens: 400,
        summary_mode: SummaryMode::Transcript,
        ..CompactionSettings::default()
    };
    let preparation = prepare_due(&session, &settings);
    assert!(preparation.is_split_turn);
    let main = render(&context(&session), &anthropic_capabilities());
    // Each call waits for the other: run one after the other, they would time out.
    let provider = ScriptedProvider::new(|request| {
        let answer = if last_user_text(request).contains("EARLY PART of a turn") {
            "PREFIX SUMMARY"
        } else {
            "HISTORY SUMMARY"
        };
        Ok((answer.to_owned(), StopReason::EndTurn))
    })
    .concurrent(2);
    let result = compact(
        &provider,
        &model(&main.model),
        &main,
        &preparation,
        &settings,
        &StreamOptions::default(),
    )
    .await
    .expect("compact");
    let merged = "HISTORY SUMMARY\n\n---\n\n**Turn Context (split turn):**\n\nPREFIX SUMMARY";
    assert_eq!(result.summary, format!("{merged}{}", result.details.tags()));
    assert_eq!(result.mode, SummaryMode::Transcript);
    assert_eq!(result.usage.input, 2000, "both requests' usage is counted");
}

#[tokio::test]
async fn second_compaction_summarizes_the_first_ones_kept_tail() {
    let mut session = TestSession::new();
    for turn in 0..10 {
        session.push(user(&format!("request {turn} {}", "q".repeat(400))));
        session.push(assistant(&format!("answer {turn} {}", "a".repeat(400)), 0));
    }
    // 400 tokens: the cut lands on a user message (request 8), no split turn.
    let settings = CompactionSettings {
        keep_recent_tokens: 400,
        summary_mode: SummaryMode::Transcript,
        ..CompactionSettings::default()
    };
    let provider = ScriptedProvider::new(|request| {
        let text = last_user_text(request);
        Ok((
            if text.contains("<previous-summary>") {
                "SECOND"
            } else {
                "FIRST"
            }
            .to_owned(),
            StopReason::EndTurn,
        ))
    });
    let first_preparation = prepare_due(&session, &settings);
    let main = render(&context(&session), &anthropic_capabilities());
    let first = compact(
        &provider,
        &model(&main.model),
        &main,
        &first_preparation,
        &settings,
        &StreamOptions::default(),
    )
    .await
    .expect("first");
    let entry = compaction_entry(&first, &context(&session));
    session.session.append_compaction(entry).expect("append");
    // The first compaction kept a tail (requests 8, 9 and answers).
    let kept_tail_id = first.first_kept_entry_id.clone();
    for turn in 10..16 {
        session.push(user(&format!("request {turn} {}", "q".repeat(400))));
        session.push(assistant(&format!("answer {turn} {}", "a".repeat(400)), 0));
    }
    let second_preparation = prepare_due(&session, &settings);
    assert_eq!(
        second_preparation.previous_summary.as_deref(),
        Some("FIRST")
    );
    assert_eq!(
        second_preparation.messages_to_summarize[0].entry_id, kept_tail_id,
        "the second compaction starts at the first one's first kept entry"
    );
    let main = render(&context(&session), &anthropic_capabilities());
    let second = compact(
        &provider,
        &model(&main.model),
        &main,
        &second_preparation,
        &settings,
        &StreamOptions::default(),
    )
    .await
    .expect("second");
    assert!(second.summary.starts_with("SECOND"));
    let transcript = last_user_text(&provider.requests()[1]);
    let kept_text = match &*second_preparation.messages_to_summarize[0].message {
        AgentMessage::User(_) => "request 8",
        _ => "answer 8",
    };
    assert!(
        transcript.contains(kept_text),
        "the kept tail is in what is summarized"
    );
    assert!(transcript.contains("<previous-summary>\nFIRST\n</previous-summary>"));
    session
        .session
        .append_compaction(compaction_entry(&second, &context(&session)))
        .expect("append");
    // Every turn is either in the second summary's input or kept after it.
    let after = context(&session);
    let kept_turns: Vec<String> = after.messages[1..]
        .iter()
        .filter_map(|m| match &*m.message {
            AgentMessage::User(u) => Some(u.content.text_joined("")),
            _ => None,
        })
        .collect();
    let summarized: String = transcript.clone();
    for turn in 8..16 {
        let marker = format!("request {turn} ");
        assert!(
            summarized.contains(&marker) || kept_turns.iter().any(|t| t.starts_with(&marker)),
            "turn {turn} lost"
        );
    }
}

#[tokio::test]
async fn transcript_form_is_pis_with_its_own_cache_key_and_no_writes() {
    let session = split_turn_session();
    let settings = CompactionSettings {
        keep_recent_tokens: 100_000_000,
        summary_mode: SummaryMode::Transcript,
        ..CompactionSettings::default()
    };
    // Nothing before the cut when everything fits.
    assert!(
        prepare(session.session.tree(), &session.leaf(), &settings)
            .expect("prepare")
            .is_none()
    );
    let settings = CompactionSettings {
        keep_recent_tokens: 20,
        ..settings
    };
    let preparation = prepare_due(&session, &settings);
    let mut main = render(&context(&session), &anthropic_capabilities());
    main.cache_key = Some("session-1".into());
    let provider = ScriptedProvider::answering("S");
    compact(
        &provider,
        &model(&main.model),
        &main,
        &preparation,
        &settings,
        &StreamOptions::default(),
    )
    .await
    .expect("compact");
    let requests = provider.requests();
    assert_eq!(requests.len(), 2, "history and turn prefix");
    let request = &requests[0];
    assert!(requests[1].tools.is_empty() && requests[1].breakpoints.is_empty());
    assert!(request.tools.is_empty());
    assert!(request.breakpoints.is_empty());
    assert_eq!(
        request.cache_key.as_deref(),
        Some(&*format!("session-1{TRANSCRIPT_CACHE_KEY_SUFFIX}"))
    );
    assert_eq!(request.messages.len(), 1);
    let text = last_user_text(request);
    assert!(text.starts_with(
        "<conversation>\n[User]: first task: rename the module\n\n[Assistant]: renamed"
    ));
    let prefix = last_user_text(&requests[1]);
    assert!(prefix.starts_with("<conversation>\n[User]: second task: fix every warning"));
    assert!(prefix.contains("[Assistant tool calls]: read(path=\"src/m0.rs\")"));
    assert!(prefix.contains("## Original Request") && prefix.contains("## Context for Suffix"));
    assert!(text.contains("## Goal") && text.contains("## Critical Context"));
}

#[tokio::test]
async fn another_model_falls_back_to_the_transcript() {
    let session = split_turn_session();
    let settings = CompactionSettings {
        keep_recent_tokens: 20,
        ..CompactionSettings::default()
    };
    let preparation = prepare_due(&session, &settings);
    let main = render(&context(&session), &anthropic_capabilities());
    let provider = ScriptedProvider::answering("S");
    let result = compact(
        &provider,
        &model("claude-haiku-cheap"),
        &main,
        &preparation,
        &settings,
        &StreamOptions::default(),
    )
    .await
    .expect("compact");
    assert_eq!(result.mode, SummaryMode::Transcript);
    assert_eq!(provider.requests()[0].model, "claude-haiku-cheap");
}

#[tokio::test]
async fn cut_summaries_and_bloated_summaries_are_refused() {
    let session = split_turn_session();
    let settings = CompactionSettings {
        keep_recent_tokens: 20,
        ..CompactionSettings::default()
    };
    let preparation = prepare_due(&session, &settings);
    let main = render(&context(&session), &anthropic_capabilities());
    let options = StreamOptions::default();
    let truncated =
        ScriptedProvider::new(|_| Ok(("## Goal\npartial".into(), StopReason::MaxTokens)));
    let error = compact(
        &truncated,
        &model(&main.model),
        &main,
        &preparation,
        &settings,
        &options,
    )
    .await
    .expect_err("truncated");
    assert!(
        matches!(
            error,
            CompactionError::Truncated {
                part: "split turn",
                // The history cap (80% of the reserve) plus the turn prefix's (50%).
                max_tokens: 21299,
            }
        ),
        "{error}"
    );
    assert!(error.to_string().contains("max_tokens"));

    let bloated = ScriptedProvider::answering(&"x".repeat(100_000));
    let error = compact(
        &bloated,
        &model(&main.model),
        &main,
        &preparation,
        &settings,
        &options,
    )
    .await
    .expect_err("bloated");
    assert!(
        matches!(error, CompactionError::NotSmaller { .. }),
        "{error}"
    );

    let silent = ScriptedProvider::new(|_| Ok((String::new(), StopReason::ToolUse)));
    let error = compact(
        &silent,
        &model(&main.model),
        &main,
        &preparation,
        &settings,
        &options,
    )
    .await
    .expect_err("empty");
    assert!(
        matches!(error, CompactionError::EmptySummary { .. }),
        "{error}"
    );
}

#[tokio::test]
async fn usage_is_recorded_on_the_entry_and_survives_a_reopen() {
    let mut session = split_turn_session();
    let settings = CompactionSettings {
        keep_recent_tokens: 20,
        ..CompactionSettings::default()
    };
    let provider = ScriptedProvider::answering("S");
    let result = compact_session(&session, &settings, &provider)
        .await
        .expect("compact");
    let id = session
        .session
        .append_compaction(compaction_entry(&result, &context(&session)))
        .expect("append");
    let reopened = strata_session::Session::open(session.session.path()).expect("open");
    let Entry::Compaction(entry) = reopened.session.tree().entry(id.as_str()).expect("entry")
    else {
        panic!("not a compaction");
    };
    let usage =
        recorded_usage(&strata_session::Entry::Compaction(entry.clone())).expect("usage recorded");
    assert_eq!(usage.input, result.usage.input);
    assert_eq!(usage.output, result.usage.output);
    assert_eq!(usage.output, 100, "one request for history and turn prefix");
    assert!((usage.cost.total - result.cost.total()).abs() < 1e-12);
    assert!(usage.cost.total > 0.0);
    assert_eq!(entry.details, Some(result.details.to_details()));
    // A chain without system entries (a Pi session) gets no snapshot fields.
    assert_eq!((entry.system, entry.tools), (None, None));
}

#[tokio::test]
async fn a_cache_friendly_summary_that_overflows_is_asked_again_as_a_transcript() {
    let session = split_turn_session();
    let settings = CompactionSettings {
        keep_recent_tokens: 20,
        ..CompactionSettings::default()
    };
    let preparation = prepare_due(&session, &settings);
    let main = render(&context(&session), &anthropic_capabilities());
    // The session's request did not fit, so neither does it plus an instruction; a
    // transcript (one message) does.
    let provider = ScriptedProvider::new(|request| {
        if request.messages.len() > 1 {
            Err(ProviderError::ContextOverflow {
                status: 400,
                request_id: None,
                body: "prompt is too long".into(),
            })
        } else {
            Ok(("## Goal\nshort".into(), StopReason::EndTurn))
        }
    });
    let result = compact(
        &provider,
        &model(&main.model),
        &main,
        &preparation,
        &settings,
        &StreamOptions::default(),
    )
    .await
    .expect("the transcript fits");
    assert_eq!(result.mode, SummaryMode::Transcript);
    let requests = provider.requests();
    assert!(requests.iter().any(|r| r.messages.len() > 1), "tried first");
    let answered: Vec<_> = requests.iter().filter(|r| r.messages.len() == 1).collect();
    assert!(!answered.is_empty());
    assert!(last_user_text(answered[0]).contains("<conversation>"));
    // Only the answered requests were billed.
    assert_eq!(result.usage.input, 1000 * answered.len() as u64);

    // Other errors are not retried in another form.
    let refusing = ScriptedProvider::new(|_| {
        Err(ProviderError::Auth {
            status: 401,
            request_id: None,
            body: "bad key".into(),
        })
    });
    let error = compact(
        &refusing,
        &model(&main.model),
        &main,
        &preparation,
        &settings,
        &StreamOptions::default(),
    )
    .await
    .expect_err("auth");
    assert!(matches!(error, CompactionError::Provider { .. }), "{error}");
    assert!(refusing.requests().iter().all(|r| r.messages.len() > 1));
}

#[tokio::test]
async fn a_failed_compaction_reports_what_its_finished_requests_cost() {
    let session = split_turn_session();
    let settings = CompactionSettings {
        keep_recent_tokens: 400,
        // Two requests (history, turn prefix): the transcript form sends them apart.
        summary_mode: SummaryMode::Transcript,
        ..CompactionSettings::default()
    };
    let preparation = prepare_due(&session, &settings);
    assert!(preparation.is_split_turn);
    let main = render(&context(&session), &anthropic_capabilities());
    // The history summary is fine, the turn prefix is cut: both requests were billed.
    let provider = ScriptedProvider::new(|request| {
        if last_user_text(request).contains("EARLY PART of a turn") {
            Ok(("## Original Request\npartial".into(), StopReason::MaxTokens))
        } else {
            Ok(("## Goal\nfine".into(), StopReason::EndTurn))
        }
    });
    let failure = compact_accounted(
        &provider,
        &model(&main.model),
        &main,
        &preparation,
        &settings,
        &StreamOptions::default(),
        None,
    )
    .await
    .expect_err("the prefix summary was cut");
    assert!(
        matches!(
            failure.error,
            CompactionError::Truncated {
                part: "turn prefix",
                ..
            }
        ),
        "{failure}"
    );
    assert!(failure.spent());
    assert_eq!(provider.requests().len(), 2);
    assert_eq!((failure.usage.input, failure.usage.output), (2000, 200));
    let expected = failure.usage.cost(&model(&main.model).prices).total();
    assert!((failure.cost.total() - expected).abs() < 1e-12);
    assert!(failure.cost.total() > 0.0);

    // A refusal before any answer costs nothing.
    let refusing = ScriptedProvider::new(|_| {
        Err(ProviderError::Auth {
            status: 401,
            request_id: None,
            body: "bad key".into(),
        })
    });
    let failure = compact_accounted(
        &refusing,
        &model(&main.model),
        &main,
        &preparation,
        &settings,
        &StreamOptions::default(),
        None,
    )
    .await
    .expect_err("refused");
    assert!(!failure.spent());
}

#[tokio::test]
async fn branch_summary_file_lists_before_the_cut_are_carried_into_the_compaction() {
    let mut session = TestSession::new();
    session.push(user("try the other approach"));
    session.push(assistant("ok", 0));
    let leaf = session.leaf();
    session
        .session
        .branch_with_summary(
            Some(&leaf),
            "The user explored a different conversation branch before returning here.",
            Some(json!({"readFiles": ["docs/a.md"], "modifiedFiles": ["src/b.rs"]})),
            None,
        )
        .expect("branch summary");
    // An extension's summary is not trusted for file lists (Pi's rule).
    let leaf = session.leaf();
    session
        .session
        .branch_with_summary(
            Some(&leaf),
            "From a hook.",
            Some(json!({"readFiles": ["hook/only.md"], "modifiedFiles": []})),
            Some(true),
        )
        .expect("hook summary");
    for turn in 0..6 {
        session.push(user(&format!("request {turn} {}", "q".repeat(400))));
        session.push(assistant(&"a".repeat(400), 0));
    }
    let settings = CompactionSettings {
        keep_recent_tokens: 300,
        ..CompactionSettings::default()
    };
    let provider = ScriptedProvider::answering("## Goal\nsummary");
    let result = compact_session(&session, &settings, &provider)
        .await
        .expect("compact");
    assert_eq!(result.details.read_files, ["docs/a.md"]);
    assert_eq!(result.details.modified_files, ["src/b.rs"]);
    assert!(
        result
            .summary
            .ends_with("<read-files>\ndocs/a.md\n</read-files>\n\n<modified-files>\nsrc/b.rs\n</modified-files>"),
        "{}",
        result.summary
    );
    let entry = compaction_entry(&result, &context(&session));
    assert_eq!(
        entry.details,
        Some(json!({"readFiles": ["docs/a.md"], "modifiedFiles": ["src/b.rs"]}))
    );
}
