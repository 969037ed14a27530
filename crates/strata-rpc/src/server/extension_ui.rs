//! Extensions asking the client, in Pi's extension UI subprotocol (Pi 1.6's
//! `docs/rpc-extension-ui.md`): `ui/confirm`, `ui/select` and `ui/input` go out as an
//! `extension_ui_request` (`confirm`, `select`, `input`) and wait for the
//! `extension_ui_response` with the same id; `ui/notify` and `ui/status` go out as
//! fire-and-forget `notify` and `setStatus` (the `statusKey` is the extension's name). Also
//! strata's `get_extensions` and `get_hooks`: what is loaded, as `/extensions` and `/hooks`
//! show it.

use serde_json::{Value, json};
use strata_host::extensions::{UiCall, UiRequest};

use super::{Host, Server};

/// Ids of extensions' questions, apart from the permission questions' (the gate's own ids).
const ID_PREFIX: &str = "ext-";

/// The `extension_ui_request` for `request` under `id`.
pub(crate) fn request_record(id: &str, extension: &str, request: &UiRequest) -> Value {
    match request {
        UiRequest::Confirm { title, message } => json!({
            "type": "extension_ui_request", "id": id, "method": "confirm",
            "title": title, "message": message,
        }),
        UiRequest::Select { title, options } => json!({
            "type": "extension_ui_request", "id": id, "method": "select",
            "title": title, "options": options,
        }),
        UiRequest::Input { title, placeholder } => json!({
            "type": "extension_ui_request", "id": id, "method": "input",
            "title": title, "placeholder": placeholder,
        }),
        UiRequest::Notify { message, level } => json!({
            "type": "extension_ui_request", "id": id, "method": "notify",
            "message": message, "notifyType": level,
        }),
        // Pi clears a status with `statusText` left out.
        UiRequest::Status { text } if text.is_empty() => json!({
            "type": "extension_ui_request", "id": id, "method": "setStatus",
            "statusKey": extension,
        }),
        UiRequest::Status { text } => json!({
            "type": "extension_ui_request", "id": id, "method": "setStatus",
            "statusKey": extension, "statusText": text,
        }),
    }
}

/// What an `extension_ui_response` answers to `request`: `confirmed` for a confirm, the
/// option named by `value` for a select, `value` as the text of an input; `cancelled` is the
/// unanswered default.
pub(crate) fn answer(
    request: &UiRequest,
    value: Option<String>,
    confirmed: Option<bool>,
    cancelled: bool,
) -> Value {
    if cancelled {
        return request.unanswered();
    }
    match request {
        UiRequest::Confirm { .. } => UiRequest::confirmed(confirmed.unwrap_or(false)),
        UiRequest::Select { options, .. } => {
            UiRequest::selected(value.and_then(|v| options.iter().position(|o| *o == v)))
        }
        UiRequest::Input { .. } => UiRequest::text(value),
        UiRequest::Notify { .. } | UiRequest::Status { .. } => request.unanswered(),
    }
}

impl<H: Host> Server<H> {
    /// `get_extensions` (`{extensions}`) or `get_hooks` (`{hooks, skipped}`), with what each
    /// cost in cache writes in the session so far.
    pub(crate) fn loaded_json(
        &self,
        extensions: bool,
        attributed: &[strata_runtime::Attribution],
    ) -> Value {
        let loaded = self.options.loaded.clone().unwrap_or_default();
        if extensions {
            json!({"extensions": loaded.extensions(attributed)})
        } else {
            json!({"hooks": loaded.hooks(attributed), "skipped": loaded.hook_problems()})
        }
    }

    /// Sends an extension's request to the client; a question waits for its answer.
    pub(crate) fn ask_extension(&mut self, call: UiCall) {
        self.extension_asked += 1;
        let id = format!("{ID_PREFIX}{}", self.extension_asked);
        self.out
            .send(&request_record(&id, &call.extension, &call.request));
        if call.reply.is_some() {
            self.extension_asks.insert(id, call);
        }
    }

    /// The `extension_ui_response` `id` answers an extension's question: answers it and says
    /// so; `false` for another id (a permission question's).
    pub(crate) fn extension_response(
        &mut self,
        id: Option<&str>,
        value: Option<String>,
        confirmed: Option<bool>,
        cancelled: bool,
    ) -> bool {
        let Some(call) = id.and_then(|id| self.extension_asks.remove(id)) else {
            return false;
        };
        let value = answer(&call.request, value, confirmed, cancelled);
        call.answer(value);
        true
    }
}
