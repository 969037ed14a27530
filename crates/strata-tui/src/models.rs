//! The models `/model` and Ctrl+P offer: those whose provider has credentials now first (the
//! session's own provider always), the rest after them saying what is missing.

use strata_host::Setup;

use super::stats;
use super::worker::ModelOption;

/// Every catalog model as an option, usable ones first (catalog order kept within each part).
pub fn options(setup: &Setup) -> Vec<ModelOption> {
    let initial = setup.model_choice().ok().map(|choice| choice.provider);
    let mut usable = Vec::new();
    let mut rest = Vec::new();
    for row in setup.catalog.providers() {
        let has_key =
            initial.as_deref() == Some(row.id.as_str()) || setup.credential_source(row).is_some();
        let missing = match row.auth_env.first() {
            Some(var) => format!("no key: set {var} or /login {}", row.id),
            None => "no key configured (a local server: choose it with /model)".to_owned(),
        };
        for model in setup.catalog.models_of(&row.id) {
            let option = ModelOption {
                name: model.qualified_id(),
                detail: if has_key {
                    format!(
                        "{} · {} context · ${}/${} per MTok",
                        model.name,
                        stats::tokens(model.context_window),
                        model.prices.input,
                        model.prices.output
                    )
                } else {
                    format!("{} · {missing}", model.name)
                },
                usable: has_key,
                prices: model.prices,
            };
            if has_key {
                usable.push(option);
            } else {
                rest.push(option);
            }
        }
    }
    usable.extend(rest);
    usable
}
