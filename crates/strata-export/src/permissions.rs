//! Tool calls the rules layer did not simply allow: the mark a result carries when its
//! details hold the gate's judgement (`strataPermission`: refused by a rule or the mode,
//! asked and allowed, asked and refused).

use serde_json::Value;

/// The key strata's agent writes the judgement under.
const KEY: &str = "strataPermission";

/// The words marking a result, or `None` for a call that simply ran.
pub fn mark(details: &Value) -> Option<String> {
    let record = details.get(KEY)?;
    let source = record["source"].as_str().unwrap_or("the rules");
    let rule = record["rule"]
        .as_str()
        .map(|rule| format!(" `{rule}`"))
        .unwrap_or_default();
    Some(match (record["verdict"].as_str(), &record["answer"]) {
        (Some("deny"), _) => format!("refused by{rule} ({source})"),
        (_, Value::Object(answer)) => {
            let said = match answer.get("answer").and_then(Value::as_str) {
                Some("allow_once") => "allowed once".to_owned(),
                Some("allow_session") => "allowed for the session".to_owned(),
                Some("allow_project") => "allowed for the project".to_owned(),
                _ => match answer.get("reason").and_then(Value::as_str) {
                    Some(reason) => format!("refused: {reason}"),
                    None => "refused".to_owned(),
                },
            };
            format!("asked the user: {said}")
        }
        // Asked where nobody could answer: refused with how to allow it, or run with --yes.
        _ if record["ran"] == true => format!("would ask{rule}; run unasked (--yes)"),
        _ => format!("would ask{rule}; nobody could answer, refused"),
    })
}
