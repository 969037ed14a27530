"""Request bodies strata's adapters build (`strata context --format request`, the same code
`stream` sends), judged by the vendors' request types and re-sent through each SDK to a
recording server: the SDK must send the same JSON strata would."""

import collections.abc
import json
import os
import subprocess
import types
import typing

import typing_extensions

import anthropic
import boto3
import botocore.config
import botocore.validate
import openai
import pydantic
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as gtypes

from conftest import ROOT, binary

SESSION = ROOT / "tests/fixtures/pi/strata-entries.jsonl"

# (provider, model, [cache] retention): a spread of capability-table rows — mid-conversation
# system messages with tool changes (Opus 4.8) and without (Sonnet 4.5), Responses with 24h
# retention (gpt-5.5) and in-memory (gpt-5.2), Chat Completions with DeepSeek's quirks and
# with plain OpenAI, Bedrock with 1h and 5m cache points.
ROWS = [
    ("anthropic", "claude-opus-4-8", "long"),
    ("anthropic", "claude-sonnet-4-5", "short"),
    ("openai", "gpt-5.5", "auto"),
    ("openai", "gpt-5.2", "short"),
    ("deepseek", "deepseek-v4-flash", "auto"),
    ("mistral", "devstral-medium-latest", "auto"),
    ("amazon-bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0", "long"),
    ("amazon-bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0", "short"),
]


def printed(provider, model, retention, tmp_path):
    config = tmp_path / ".config/strata"
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(f'[cache]\nretention = "{retention}"\n')
    env = {**os.environ, "HOME": str(tmp_path), "AWS_REGION": "us-west-2"}
    env.pop("XDG_CONFIG_HOME", None)
    out = subprocess.run(
        [str(binary("strata")), "context", str(SESSION), "--format", "request", "--provider", provider, "--model", model],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout)["wire"]


def undeclared(hint, value, path="$"):
    """Keys in `value` that the request type `hint` (TypedDicts, unions, lists) does not
    declare; [] when one reading of the type declares them all."""
    origin = typing.get_origin(hint)
    if origin in (typing.Annotated, typing_extensions.Required, typing_extensions.NotRequired, typing.Required, typing.NotRequired):
        return undeclared(typing.get_args(hint)[0], value, path)
    if origin in (typing.Union, types.UnionType):
        readings = [undeclared(member, value, path) for member in typing.get_args(hint)]
        fitting = [r for r in readings if r is not None]
        return min(fitting, key=len) if fitting else None
    if typing_extensions.is_typeddict(hint):
        if not isinstance(value, dict):
            return None
        fields = typing.get_type_hints(hint, include_extras=True)
        tag = fields.get("type")
        if tag is not None and "type" in value:
            allowed = typing.get_args(typing.get_args(tag)[0] if typing.get_origin(tag) in (typing.Required, typing_extensions.Required) else tag)
            if allowed and value["type"] not in allowed:
                return None
        found = [f"{path}.{k}" for k in value if k not in fields]
        for k, v in value.items():
            if k in fields:
                inner = undeclared(fields[k], v, f"{path}.{k}")
                if inner is None:
                    return None
                found += inner
        return found
    if origin in (list, collections.abc.Iterable, collections.abc.Sequence, typing.Iterable, typing.List):
        if not isinstance(value, list):
            return None
        found = []
        for i, item in enumerate(value):
            inner = undeclared(typing.get_args(hint)[0], item, f"{path}[{i}]")
            if inner is None:
                return None
            found += inner
        return found
    return []


def strict_typed_dict(type_, body):
    """Validates a request body against the SDK's TypedDict, refusing undeclared keys."""
    pydantic.TypeAdapter(type_).validate_python(body)
    extra = undeclared(type_, body)
    assert extra == [], f"keys {type_.__name__} does not declare: {extra}"


def sent_json(bodies):
    assert bodies, "the SDK sent nothing"
    return json.loads(bodies[-1][1])


@pytest.mark.parametrize("provider,model,retention", [r for r in ROWS if r[0] == "anthropic"])
def test_anthropic_bodies(provider, model, retention, tmp_path, recorder):
    wire = printed(provider, model, retention, tmp_path)
    body = wire["body"]
    # Mid-conversation system messages and tool changes are beta types in 2.15.0.
    from anthropic.types.beta.message_create_params import MessageCreateParamsStreaming

    strict_typed_dict(MessageCreateParamsStreaming, body)
    # Every beta the body needs is in the header strata sends with it.
    sent_betas = {
        beta
        for name, value in wire["headers"]
        if name.lower() == "anthropic-beta"
        for beta in value.split(",")
    }
    missing = anthropic_betas_needed(body) - sent_betas
    assert not missing, f"the body needs {missing}; strata sends {sent_betas}"
    ttls = {b["cache_control"].get("ttl", "5m") for b in body["system"] if "cache_control" in b}
    assert ttls == ({"1h"} if retention == "long" else {"5m"}), ttls
    url, bodies = recorder
    client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
    with pytest.raises(anthropic.BadRequestError):
        client.beta.messages.create(**body)
    assert sent_json(bodies) == body


@pytest.mark.parametrize("provider,model,retention", [r for r in ROWS if r[0] == "openai"])
def test_responses_bodies(provider, model, retention, tmp_path, recorder):
    body = printed(provider, model, retention, tmp_path)["body"]
    from openai.types.responses.response_create_params import ResponseCreateParamsStreaming

    strict_typed_dict(ResponseCreateParamsStreaming, body)
    if model == "gpt-5.5":
        assert body.get("prompt_cache_retention") == "24h", body.keys()
    url, bodies = recorder
    client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
    with pytest.raises(openai.BadRequestError):
        client.responses.create(**body)
    assert sent_json(bodies) == body


@pytest.mark.parametrize("provider,model,retention", [r for r in ROWS if r[0] in ("deepseek", "mistral")])
def test_chat_bodies(provider, model, retention, tmp_path, recorder):
    body = printed(provider, model, retention, tmp_path)["body"]
    from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming

    quirks = {}
    if provider == "deepseek":
        # DeepSeek's own fields, not OpenAI's: `thinking` (api-docs.deepseek.com, "Thinking
        # Mode") and `reasoning_content` on assistant turns (same page, "multi-turn").
        quirks["thinking"] = body.pop("thinking", None)
        for m in body["messages"]:
            m.pop("reasoning_content", None)
    strict_typed_dict(CompletionCreateParamsStreaming, body)
    url, bodies = recorder
    client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(**body, extra_body={k: v for k, v in quirks.items() if v is not None})
    sent = sent_json(bodies)
    for k, v in quirks.items():
        if v is not None:
            body[k] = v
    if provider == "deepseek":
        sent_messages = sent["messages"]
        for m in sent_messages:
            m.pop("reasoning_content", None)
    assert sent == body


@pytest.mark.parametrize("provider,model,retention", [r for r in ROWS if r[0] == "amazon-bedrock"])
def test_bedrock_bodies(provider, model, retention, tmp_path, recorder):
    body = printed(provider, model, retention, tmp_path)["body"]
    client = boto3.client(
        "bedrock-runtime", region_name="us-west-2", aws_access_key_id="AKIDTEST", aws_secret_access_key="s",
        endpoint_url=recorder[0], config=botocore.config.Config(retries={"total_max_attempts": 1}),
    )
    shape = client.meta.service_model.operation_model("ConverseStream").input_shape
    params = {"modelId": model, **body}
    report = botocore.validate.ParamValidator().validate(params, shape)
    assert not report.has_errors(), report.generate_report()
    ttls = {p["cachePoint"].get("ttl", "5m") for p in body["system"] if "cachePoint" in p}
    assert ttls == ({"1h"} if retention == "long" else {"5m"}), ttls
    url, bodies = recorder
    with pytest.raises(Exception):
        client.converse_stream(**params)
    assert sent_json(bodies) == body


GEMINI_SESSION = ROOT / "conformance/fixtures/gemini-session.jsonl"

# google-genai has no type for the REST body as a whole (its converters build a dict from
# `GenerateContentParameters`); each top-level field is judged by the SDK type it comes from.
GEMINI_FIELDS = {
    "contents": list[gtypes.Content],
    "systemInstruction": gtypes.Content,
    "tools": list[gtypes.Tool],
    "toolConfig": gtypes.ToolConfig,
    "generationConfig": gtypes.GenerationConfig,
    "cachedContent": str,
}

# Gemini rows: a thinking budget (2.5) and a thinking level (3), on the Gemini API and on
# Vertex. The session (fixtures/gemini-session.jsonl) has signed thoughts, a signature-only
# thought before a function call, tool results (one an error), and a mid-conversation patch
# that adds one tool and removes another.
GEMINI_ROWS = [
    ("google", "gemini-2.5-flash"),
    ("google", "gemini-3-pro-preview"),
    ("google-vertex", "gemini-2.5-flash"),
]


def gemini_printed(provider, model, tmp_path):
    config = tmp_path / ".config/strata"
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text("")
    env = {**os.environ, "HOME": str(tmp_path), "GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "us-central1"}
    env.pop("XDG_CONFIG_HOME", None)
    out = subprocess.run(
        [str(binary("strata")), "context", str(GEMINI_SESSION), "--format", "request", "--provider", provider, "--model", model],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout)["wire"]


# Values that are free-form JSON (google.protobuf.Struct / Value): their keys are data.
GEMINI_FREE_FORM = {"args", "response", "parametersJsonSchema", "responseJsonSchema", "parameters", "responseSchema"}


def proto_json_names(value):
    """`value` with every field name in its lowerCamelCase form. google-genai 3.6.1 sends some
    nested fields under their proto names (`thinking_budget`, `parameters_json_schema`); the
    API reads both, as the proto3 JSON mapping prescribes ("Parsers accept both the
    lowerCamelCase name ... and the original proto field name": protobuf.dev, Programming
    Guides, ProtoJSON Format). Free-form values (tool arguments, schemas) keep their keys."""
    if isinstance(value, list):
        return [proto_json_names(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        head, *rest = key.split("_")
        name = head + "".join(w[:1].upper() + w[1:] for w in rest)
        out[name] = item if name in GEMINI_FREE_FORM else proto_json_names(item)
    return out


@pytest.mark.parametrize("provider,model", GEMINI_ROWS)
def test_gemini_bodies(provider, model, tmp_path, recorder):
    body = gemini_printed(provider, model, tmp_path)["body"]
    unknown = sorted(set(body) - set(GEMINI_FIELDS))
    assert not unknown, f"top-level fields google-genai 3.6.1 has no type for: {unknown}"
    typed = {}
    for field, value in body.items():
        # Strict, from JSON as the API reads it: bytes (thoughtSignature) must be base64,
        # and the SDK's models forbid undeclared fields.
        typed[field] = pydantic.TypeAdapter(GEMINI_FIELDS[field]).validate_json(json.dumps(value), strict=True)
    parts = [p for c in typed["contents"] for p in c.parts]
    assert any(p.function_response and "error" in p.function_response.response for p in parts)
    declared = [d.name for t in typed["tools"] for d in t.function_declarations]
    # No mid-conversation system messages on these rows. With `system_reminders` (the table's
    # default) the tools array only grows and the system prompt stays: the patch and the tool
    # changes are said in a marked reminder after the user's message.
    assert "grep" in declared and "ls" in declared, declared
    assert "Prefer grep" not in typed["systemInstruction"].parts[0].text
    texts = [p.text for c in typed["contents"] if c.role == "user" for p in c.parts if p.text]
    reminders = [t for t in texts if t.startswith("<system-reminder>")]
    assert reminders, texts
    assert "Prefer grep" in reminders[-1] and "`ls`" in reminders[-1], reminders[-1]
    thinking = typed["generationConfig"].thinking_config
    if model.startswith("gemini-3"):
        assert thinking.thinking_level is not None, "Gemini 3 takes a thinking level"
    else:
        assert thinking.thinking_budget, "Gemini 2.5 takes a thinking budget"
    if provider == "google" and model.startswith("gemini-2.5"):
        # Signatures go back only to the provider and model that made them.
        assert any(p.thought_signature for p in parts if p.function_call), "a signed function call"
    generation = typed["generationConfig"]
    config = gtypes.GenerateContentConfig(
        system_instruction=typed.get("systemInstruction"),
        tools=typed.get("tools"),
        tool_config=typed.get("toolConfig"),
        cached_content=typed.get("cachedContent"),
        **{name: getattr(generation, name) for name in generation.model_fields_set},
    )
    url, bodies = recorder
    # Vertex takes the same GenerateContentRequest; the Gemini API client sends it as is.
    client = genai.Client(api_key="k", http_options=gtypes.HttpOptions(base_url=url, retry_options=None))
    with pytest.raises(genai_errors.APIError):
        for _ in client.models.generate_content_stream(model=model, contents=typed["contents"], config=config):
            pass
    path, _ = bodies[-1]
    assert proto_json_names(body) == body, "strata sends the REST reference's lowerCamelCase names"
    assert proto_json_names(sent_json(bodies)) == body
    assert path.endswith(f"/models/{model}:streamGenerateContent?alt=sse"), path


# The beta header each Anthropic body shape needs (anthropic-python `AnthropicBetaParam`).
def anthropic_betas_needed(body):
    needed = set()
    if "diagnostics" in body:
        needed.add("cache-diagnosis-2026-04-07")
    if "context_management" in body:
        needed.add("context-management-2025-06-27")
    if "thread" in body:
        needed.add("message-threads-2026-08-12")
    for message in body["messages"]:
        if message["role"] != "system":
            continue
        if "output_config" in message:
            needed.add("mid-conversation-output-config-2026-07-01")
        if message.get("clear_at") not in (None, "never"):
            needed.add("mid-conversation-system-clear-at-2026-08-21")
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") in ("tool_addition", "tool_removal"):
                needed.add("mid-conversation-tool-changes-2026-07-01")
                if block["tool"].get("type") == "tool_definition":
                    needed.add("inline-tools-2026-09-15")
    return needed


def fixture_entries(name):
    return json.loads((ROOT / "conformance/fixtures" / name).read_text())


@pytest.mark.parametrize("entry", fixture_entries("anthropic-beta-bodies.json"), ids=lambda e: e["name"])
def test_anthropic_beta_bodies_carry_their_headers(entry, recorder):
    """The adapter's newest shapes (kept current by strata-anthropic's `conformance_bodies`
    test): valid beta request bodies, every beta they need in the header strata sends, and the
    SDK's beta client sends the same JSON and header."""
    from anthropic.types.anthropic_beta_param import AnthropicBetaParam
    from anthropic.types.beta.message_create_params import MessageCreateParamsStreaming

    body, betas = entry["body"], entry["anthropic_beta"]
    strict_typed_dict(MessageCreateParamsStreaming, body)
    known = set(typing.get_args(typing.get_args(AnthropicBetaParam)[1]))
    assert set(betas) <= known, set(betas) - known
    missing = anthropic_betas_needed(body) - set(betas)
    assert not missing, f"{entry['name']}: the body needs {missing}"
    url, bodies = recorder
    client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
    with pytest.raises(anthropic.BadRequestError):
        client.beta.messages.create(**body, betas=betas)
    assert sent_json(bodies) == body
    import conftest

    assert conftest.Recorder.headers[-1].get("anthropic-beta", "") == ",".join(betas)


@pytest.mark.parametrize("entry", fixture_entries("responses-beta-bodies.json"), ids=lambda e: e["name"])
def test_responses_beta_bodies(entry, recorder):
    """The Responses adapter's newest shapes: `configuration_update` and `additional_tools`
    items are in openai-python's beta types (sent by `client.beta.responses`, `POST /responses?beta=true`),
    `prompt_cache_options.comparison_response_id` / `prewarm` in the GA ones."""
    from openai.types.beta.response_create_params import ResponseCreateParamsStreaming as Beta
    from openai.types.responses.response_create_params import ResponseCreateParamsStreaming

    body = entry["body"]
    beta = any(
        item.get("type") in ("configuration_update", "additional_tools") for item in body["input"]
    )
    strict_typed_dict(Beta if beta else ResponseCreateParamsStreaming, body)
    url, bodies = recorder
    client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
    with pytest.raises(openai.BadRequestError):
        (client.beta.responses if beta else client.responses).create(**body)
    assert sent_json(bodies) == body


@pytest.mark.parametrize("entry", fixture_entries("bedrock-bodies.json"), ids=lambda e: e["name"])
def test_bedrock_newest_bodies(entry, recorder):
    """The Bedrock adapter's newest shapes (kept current by strata-bedrock's
    `conformance_bodies` test): a `role: "system"` message with `toolAddition` /
    `toolRemoval` blocks, and the fallback as user text, valid for botocore's ConverseStream
    input and sent unchanged by boto3."""
    body, model = entry["body"], entry["modelId"]
    client = boto3.client(
        "bedrock-runtime", region_name="us-west-2", aws_access_key_id="AKIDTEST", aws_secret_access_key="s",
        endpoint_url=recorder[0], config=botocore.config.Config(retries={"total_max_attempts": 1}),
    )
    shape = client.meta.service_model.operation_model("ConverseStream").input_shape
    params = {"modelId": model, **body}
    report = botocore.validate.ParamValidator().validate(params, shape)
    assert not report.has_errors(), report.generate_report()
    configured = {t["toolSpec"]["name"] for t in body["toolConfig"]["tools"] if "toolSpec" in t}
    for message in body["messages"]:
        for block in message["content"]:
            for kind in ("toolAddition", "toolRemoval"):
                if kind in block:
                    assert message["role"] == "system", block
                    assert block[kind]["tool"]["name"] in configured, block
    url, bodies = recorder
    with pytest.raises(Exception):
        client.converse_stream(**params)
    assert sent_json(bodies) == body


@pytest.mark.parametrize(
    "entry", fixture_entries("responses-socket-messages.json"), ids=lambda e: e["name"]
)
def test_responses_socket_messages(entry):
    """The WebSocket mode's `response.create` messages (kept current by strata-openai-responses'
    `conformance_bodies` test from what strata-mock's socket received): openai-python's beta
    `BetaResponsesClientEventParam` `ResponseCreate`, which says `stream` "should not be sent"
    and `background` is not supported over the socket."""
    from openai.types.beta.beta_responses_client_event_param import ResponseCreate

    message = entry["message"]
    strict_typed_dict(ResponseCreate, message)
    assert "stream" not in message and "background" not in message
    if "previous_response_id" in message:
        # Only the new items: the tool's result.
        assert [item.get("type") for item in message["input"]] == ["function_call_output"]
