//! Every row that speaks Gemini routes here and builds a valid request.

use std::sync::Arc;

use serde_json::Value;
use strata_google::GoogleProvider;
use strata_provider::transport::{HttpClient, TransportConfig, auth_header};
use strata_provider::{ApiKey, Catalog, Message, Protocol, Request, StreamOptions, SystemBlock};

fn fake_env(name: &str) -> Option<String> {
    Some(match name {
        "GOOGLE_CLOUD_PROJECT" => "proj".to_owned(),
        "GOOGLE_CLOUD_LOCATION" => "europe-west4".to_owned(),
        other => format!("key-of-{other}"),
    })
}

#[test]
fn every_gemini_row_builds_a_valid_request() {
    let catalog = Catalog::builtin().unwrap();
    let mut covered = Vec::new();
    for row in catalog.providers() {
        if !row.protocols().contains(&Protocol::GoogleGenerativeAi) {
            continue;
        }
        let model = catalog
            .models_of(&row.id)
            .find(|m| row.endpoint(&m.id).protocol == Protocol::GoogleGenerativeAi)
            .unwrap_or_else(|| panic!("row `{}` has no Gemini model", row.id))
            .clone();
        let endpoint = row.endpoint(&model.id);
        let client = HttpClient::new(&TransportConfig::default()).unwrap();
        // Everything the row leaves open (key, Vertex project and region) comes from the
        // environment, as the CLI's process environment would give it.
        let provider = GoogleProvider::new(row.clone(), client).with_env(Arc::new(fake_env));
        let mut request = Request::new(model.id.clone());
        request.system.push(SystemBlock::text("sys"));
        request.messages.push(Message::user_text("hi"));
        let options = StreamOptions::default();
        let http = provider.prepare(&model, &request, &options, None).unwrap();
        assert!(
            http.url.ends_with(&format!(
                "models/{}:streamGenerateContent?alt=sse",
                model.id
            )),
            "{}: {}",
            row.id,
            http.url
        );
        assert!(!http.url.contains('{'), "{}: {}", row.id, http.url);
        let var = endpoint.auth_env.first().unwrap();
        let (name, value) =
            auth_header(endpoint.auth, &ApiKey::new(format!("key-of-{var}"))).unwrap();
        assert_eq!(http.header_value(name), Some(value.as_str()), "{}", row.id);
        let body: Value = serde_json::from_slice(&http.body).unwrap();
        assert_eq!(body["contents"][0]["role"], "user");
        assert_eq!(body["contents"][0]["parts"][0]["text"], "hi");
        assert_eq!(body["systemInstruction"]["parts"][0]["text"], "sys");
        covered.push((row.id.clone(), http.url.clone()));
    }
    let url_of = |id: &str| {
        covered
            .iter()
            .find(|(r, _)| r == id)
            .map(|(_, u)| u.clone())
    };
    assert!(
        url_of("google")
            .unwrap()
            .starts_with("https://generativelanguage.googleapis.com/v1beta/models/")
    );
    assert!(url_of("google-vertex").unwrap().starts_with(
        "https://europe-west4-aiplatform.googleapis.com/v1/projects/proj/locations/europe-west4/publishers/google/models/"
    ));
    assert!(url_of("opencode").is_some(), "{covered:?}");
}
