//! Operations from extensions (`op` in the extension protocol): the runtime's own [`Op`]s,
//! checked here and then queued exactly like a front end's, so they run, wait for a run or
//! steer it by the same rules.

use serde_json::Value;
use strata_hooks::OpCall;
use tokio::sync::mpsc;

use crate::{Op, OpName};

/// Checks `op` (an [`Op`] as JSON) as an extension sent it: the operation, or why an
/// extension may not send it. Permissions, the session's end and records of commands are the
/// user's and the core's: an extension that could answer a permission question or lower the
/// mode would be a way around the rules layer.
pub(crate) fn admit(op: Value) -> Result<Op, String> {
    let op: Op = serde_json::from_value(op).map_err(|error| {
        format!("not an operation of the session runtime ({{\"op\": NAME, \"args\": …}}): {error}")
    })?;
    let why = match op.name() {
        OpName::SetPermissionMode | OpName::AnswerPermission => {
            "permissions are the user's to change and answer"
        }
        OpName::Shutdown => "only the front end ends the session",
        OpName::RecordBash => "it records a command strata did not run",
        OpName::Bash | OpName::AbortBash => {
            "the user's own commands run outside the permission rules"
        }
        OpName::Query => "its answer goes to the front end; extensions read the events",
        OpName::AwaitBackground => "it would hold every operation until background work ends",
        _ => return Ok(op),
    };
    Err(format!(
        "`{}` is not an operation extensions may send: {why}",
        op.name()
    ))
}

/// Takes the extensions' operations until their set ends, queueing each one admitted on the
/// runtime's channel and answering the extension: taken, or refused with the reason. Holds
/// the channel weakly, so the runtime still ends once every front-end handle is dropped.
pub(crate) async fn forward(mut calls: mpsc::Receiver<OpCall>, ops: mpsc::WeakUnboundedSender<Op>) {
    while let Some(call) = calls.recv().await {
        let answer = admit(call.op).and_then(|op| {
            let taken = ops.upgrade().is_some_and(|ops| ops.send(op).is_ok());
            if taken {
                tracing::debug!(extension = %call.extension, "took an extension's operation");
                Ok(())
            } else {
                Err("the session runtime has ended".to_owned())
            }
        });
        if let Some(reply) = call.reply {
            let _ = reply.send(answer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prompts_and_queue_operations_are_admitted_and_the_rules_layer_is_not() {
        let op = admit(json!({"op": "follow_up", "args": {"text": "go on", "images": []}}));
        assert_eq!(op, Ok(Op::FollowUp(crate::UserInput::text("go on"))));
        assert_eq!(admit(json!({"op": "abort"})), Ok(Op::Abort));
        let note = json!({"op": "append_custom", "args": {"custom_type": "note", "data": [1]}});
        assert_eq!(
            admit(note),
            Ok(Op::AppendCustom {
                custom_type: "note".into(),
                data: Some(json!([1]))
            })
        );
        let answer = strata_permissions::Answer::AllowOnce;
        for refused in [
            Op::SetPermissionMode(strata_permissions::Mode::Auto),
            Op::AnswerPermission {
                id: "p1".into(),
                answer,
            },
            Op::Shutdown,
        ] {
            let refused = serde_json::to_value(refused).unwrap();
            let error = admit(refused.clone()).unwrap_err();
            assert!(
                error.contains("not an operation extensions may send"),
                "{refused}: {error}"
            );
        }
        let error = admit(json!({"type": "follow_up"})).unwrap_err();
        assert!(
            error.starts_with("not an operation of the session runtime"),
            "{error}"
        );
    }
}
