"""google-genai and boto3/botocore (requirements.txt) against strata-mock's Gemini and
Bedrock Converse routes."""

import boto3
import botocore.config
import botocore.exceptions
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as gtypes

from conftest import post_raw, sse_events, validate

TURN = '[[turn]]\nthinking = "Read it first."\ntext = "Reading."\n[[turn.tool_call]]\ntool = "read"\nargs = { path = "a.txt" }\n[[turn]]\ntext = "Done."\n'
SYSTEM = "You are a careful agent. " * 400
READ = {"type": "object", "properties": {"path": {"type": "string"}}}


def gemini(url, timeout_ms=None):
    options = gtypes.HttpOptions(base_url=url, timeout=timeout_ms, retry_options=None)
    return genai.Client(api_key="gemini-key", http_options=options)


def gemini_config():
    return gtypes.GenerateContentConfig(
        system_instruction=SYSTEM,
        tools=[gtypes.Tool(function_declarations=[gtypes.FunctionDeclaration(name="read", parameters_json_schema=READ)])],
        thinking_config=gtypes.ThinkingConfig(include_thoughts=True, thinking_budget=1024),
    )


def test_gemini_plain_streamed_tool_turn_and_signature(mock):
    mock.scenario(TURN)
    c = gemini(mock.url)
    first = c.models.generate_content(model="gemini-2.5-flash", contents="Look at a.txt", config=gemini_config())
    parts = first.candidates[0].content.parts
    call = next(p for p in parts if p.function_call)
    assert call.function_call.args == {"path": "a.txt"}, "the snake_case schema is read"
    assert isinstance(call.thought_signature, bytes) and call.thought_signature
    second = c.models.generate_content(
        model="gemini-2.5-flash",
        contents=[
            gtypes.Content(role="user", parts=[gtypes.Part(text="Look at a.txt")]),
            first.candidates[0].content,
            gtypes.Content(role="user", parts=[gtypes.Part.from_function_response(name="read", response={"output": "hi"})]),
        ],
        config=gemini_config(),
    )
    assert second.text == "Done."
    mock.scenario(TURN)
    raw = post_raw(
        mock.url + "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
        {"x-goog-api-key": "k"},
    )
    for _, data in sse_events(raw):
        validate(gtypes.GenerateContentResponse, data)
    chunks = list(c.models.generate_content_stream(model="gemini-2.5-flash", contents="hi", config=gemini_config()))
    assert chunks[-1].candidates[0].finish_reason == gtypes.FinishReason.STOP


def test_gemini_plain_reply_validates_strictly_and_reads_the_cache(mock):
    body = {"systemInstruction": {"parts": [{"text": SYSTEM}]}, "contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    url = mock.url + "/v1beta/models/gemini-2.5-flash:generateContent"
    import json
    validate(gtypes.GenerateContentResponse, json.loads(post_raw(url, body, {"x-goog-api-key": "k"})))
    c = gemini(mock.url)
    again = c.models.generate_content(model="gemini-2.5-flash", contents="hi", config=gtypes.GenerateContentConfig(system_instruction=SYSTEM))
    assert again.usage_metadata.cached_content_token_count > 0


def test_gemini_explicit_cache_through_the_sdk(mock):
    """strata-mock's `cachedContents` as google-genai creates, reads and uses them: the
    resource validates strictly as `CachedContent`, and a request naming it reads the whole
    cache (`cachedContentTokenCount`)."""
    import json

    create = {
        "model": "models/gemini-2.5-flash",
        "systemInstruction": {"parts": [{"text": SYSTEM}]},
        "contents": [{"role": "user", "parts": [{"text": "Look at a.txt"}]}],
        "ttl": "300s",
    }
    import datetime

    resource = json.loads(post_raw(mock.url + "/v1beta/cachedContents", create, {"x-goog-api-key": "k"}))
    # google-genai's models read datetimes in Python mode, where strict mode takes no string:
    # the three times are checked as RFC 3339 here and the rest strictly.
    for field in ("createTime", "updateTime", "expireTime"):
        assert datetime.datetime.fromisoformat(resource.pop(field)).tzinfo is not None
    validate(gtypes.CachedContent, resource)
    c = gemini(mock.url)
    cache = c.caches.create(
        model="gemini-2.5-flash",
        config=gtypes.CreateCachedContentConfig(
            system_instruction=SYSTEM,
            contents=[gtypes.Content(role="user", parts=[gtypes.Part(text="Look at a.txt")])],
            ttl="300s",
        ),
    )
    assert cache.name.startswith("cachedContents/"), cache
    tokens = cache.usage_metadata.total_token_count
    assert tokens > 400
    assert c.caches.get(name=cache.name).expire_time == cache.expire_time
    reply = c.models.generate_content(
        model="gemini-2.5-flash", contents="and b.txt?", config=gtypes.GenerateContentConfig(cached_content=cache.name)
    )
    assert reply.usage_metadata.cached_content_token_count == tokens
    with pytest.raises(genai_errors.ClientError) as refused:
        c.models.generate_content(
            model="gemini-2.5-flash",
            contents="hi",
            config=gtypes.GenerateContentConfig(cached_content="cachedContents/none"),
        )
    assert refused.value.code == 404


@pytest.mark.parametrize(
    "kind,code",
    [({"kind": "rate_limit", "retry_after_secs": 0}, 429), ({"kind": "server_error"}, 500), ({"kind": "overloaded"}, 503), ({"kind": "context_length"}, 400)],
)
def test_gemini_error_faults(mock, kind, code):
    mock.post("/_mock/faults", kind)
    c = gemini(mock.url)
    with pytest.raises(genai_errors.APIError) as raised:
        c.models.generate_content(model="gemini-2.5-flash", contents="hi")
    assert raised.value.code == code


@pytest.mark.parametrize("kind", [{"kind": "malformed", "at_event": 0}, {"kind": "hang"}, {"kind": "stall_after", "events": 0}])
def test_gemini_stream_faults(mock, kind):
    mock.post("/_mock/faults", kind)
    c = gemini(mock.url, timeout_ms=1000)
    with pytest.raises(Exception) as raised:
        list(c.models.generate_content_stream(model="gemini-2.5-flash", contents="hi"))
    assert "closed" not in str(raised.value), raised.value


def bedrock(url, timeout=60):
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=url,
        region_name="us-west-2",
        aws_access_key_id="AKIDTEST",
        aws_secret_access_key="secret",
        config=botocore.config.Config(retries={"total_max_attempts": 1}, read_timeout=timeout, parameter_validation=True),
    )


BEDROCK_MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"


def converse_args(**extra):
    return {
        "modelId": BEDROCK_MODEL,
        "system": [{"text": SYSTEM}, {"cachePoint": {"type": "default"}}],
        "messages": [{"role": "user", "content": [{"text": "Look at a.txt"}]}],
        "toolConfig": {"tools": [{"toolSpec": {"name": "read", "inputSchema": {"json": READ}}}]},
        "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 1024}},
        **extra,
    }


def test_bedrock_converse_and_stream_parse_through_botocore(mock):
    mock.scenario(TURN)
    c = bedrock(mock.url)
    reply = c.converse(**converse_args())
    content = reply["output"]["message"]["content"]
    assert [next(iter(block)) for block in content] == ["reasoningContent", "text", "toolUse"]
    assert content[0]["reasoningContent"]["reasoningText"]["signature"]
    mock.scenario(TURN)
    events = list(c.converse_stream(**converse_args())["stream"])
    names = [next(iter(e)) for e in events]
    assert names[0] == "messageStart" and "metadata" in names, names
    again = c.converse(**converse_args(additionalModelRequestFields={}))
    assert again["usage"].get("cacheReadInputTokens", 0) > 0


@pytest.mark.parametrize(
    "kind,error",
    [({"kind": "rate_limit", "retry_after_secs": 0}, "ThrottlingException"), ({"kind": "server_error"}, "InternalServerException"), ({"kind": "overloaded"}, "ServiceUnavailableException"), ({"kind": "context_length"}, "ValidationException")],
)
def test_bedrock_error_faults_are_the_modeled_exceptions(mock, kind, error):
    mock.post("/_mock/faults", kind)
    with pytest.raises(botocore.exceptions.ClientError) as raised:
        bedrock(mock.url).converse(**converse_args())
    assert raised.value.response["Error"]["Code"] == error


@pytest.mark.parametrize("kind", [{"kind": "malformed", "at_event": 1}, {"kind": "stream_error", "after_events": 1}, {"kind": "stall_after", "events": 1}])
def test_bedrock_stream_faults(mock, kind):
    mock.post("/_mock/faults", kind)
    with pytest.raises(Exception):
        list(bedrock(mock.url, timeout=1).converse_stream(**converse_args())["stream"])
