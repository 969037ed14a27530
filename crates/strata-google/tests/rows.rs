//! Every row that speaks Gemini routes here and builds a valid request.

use std::collections::BTreeMap;

use serde_json::Value;
use strata_google::GoogleProvider;
use strata_provider::transport::{HttpClient, TransportConfig, auth_header};
use strata_provider::{ApiKey, Catalog, Message, Protocol, Request, StreamOptions, SystemBlock};

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
        // Vertex rows name a regional aiplatform host; the caller configures project and region.
        let provider = if endpoint.base_url.contains("{GOOGLE_CLOUD_LOCATION}") {
            GoogleProvider::new(row.clone(), client).vertex("proj", "europe-west4")
        } else {
            GoogleProvider::new(row.clone(), client).with_url_vars(BTreeMap::new())
        };
        let mut request = Request::new(model.id.clone());
        request.system.push(SystemBlock::text("sys"));
        request.messages.push(Message::user_text("hi"));
        let options = StreamOptions {
            api_key: Some(ApiKey::new("key-123")),
            ..StreamOptions::default()
        };
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
        let (name, value) = auth_header(endpoint.auth, &ApiKey::new("key-123")).unwrap();
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
