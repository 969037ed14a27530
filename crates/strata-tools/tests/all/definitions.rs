use strata_tools::ToolSet;

/// The tool array is part of the cached prompt prefix: its bytes must not change by accident.
/// A deliberate change updates the snapshot (`cargo insta review`, or INSTA_UPDATE=always).
#[test]
fn tool_definitions_are_byte_stable() {
    let lines: Vec<String> = ToolSet::all()
        .definitions()
        .iter()
        .map(|d| serde_json::to_string(d).unwrap())
        .collect();
    insta::assert_snapshot!("tool_definitions", lines.join("\n"));
}

#[test]
fn definitions_are_identical_across_instances() {
    let a = serde_json::to_vec(&ToolSet::all().definitions()).unwrap();
    let b = serde_json::to_vec(&ToolSet::all().definitions()).unwrap();
    assert_eq!(a, b);
}

#[test]
fn every_schema_is_a_plain_object_schema_providers_accept() {
    for definition in ToolSet::all().definitions() {
        let params = &definition.parameters;
        assert_eq!(params["type"], "object", "{}", definition.name);
        assert!(params.get("$schema").is_none(), "{}", definition.name);
        assert!(params.get("$defs").is_none(), "{}", definition.name);
        let text = params.to_string();
        assert!(!text.contains("\"null\""), "{}: {text}", definition.name);
        assert!(!text.contains("$ref"), "{}: {text}", definition.name);
        assert!(!text.contains("format"), "{}: {text}", definition.name);
    }
}

#[test]
fn every_builtin_has_a_prompt_snippet_and_edit_carries_guidelines() {
    for tool in ToolSet::all().iter() {
        let snippet = tool.prompt_snippet().unwrap_or_default();
        assert!(!snippet.is_empty(), "{}", tool.name());
        assert!(!snippet.contains('\n'), "{}", tool.name());
    }
    let all = ToolSet::all();
    let edit = all.get("edit").unwrap();
    assert!(
        edit.prompt_guidelines()
            .iter()
            .any(|g| g.contains("edits[]"))
    );
}
