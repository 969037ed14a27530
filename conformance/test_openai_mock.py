"""openai-python (requirements.txt) against strata-mock's Chat Completions and Responses routes."""

import openai
import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent

from conftest import post_raw, sse_events, validate

TURN = '[[turn]]\nthinking = "Read it first."\ntext = "Reading."\n[[turn.tool_call]]\ntool = "read"\nargs = { path = "a.txt" }\n[[turn]]\ntext = "Done."\n'
SYSTEM = "You are a careful agent. " * 400


def client(url, **extra):
    return openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0, **extra)


def chat_body(**extra):
    return {
        "model": "gpt-4.1",
        "messages": [
            {"role": "developer", "content": SYSTEM},
            {"role": "user", "content": "Look at a.txt"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "read",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                },
            }
        ],
        "prompt_cache_key": "session-1",
        **extra,
    }


def responses_body(**extra):
    return {
        "model": "gpt-5.2",
        "instructions": SYSTEM,
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "Look at a.txt"}]}],
        "tools": [
            {
                "type": "function",
                "name": "read",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                "strict": False,
            }
        ],
        "reasoning": {"effort": "medium", "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
        "store": False,
        "prompt_cache_key": "session-1",
        **extra,
    }


def test_chat_plain_and_streamed_replies_validate(mock):
    mock.scenario(TURN)
    raw = client(mock.url).chat.completions.with_raw_response.create(**chat_body())
    completion = validate(ChatCompletion, raw.http_response.json())
    assert completion.choices[0].message.tool_calls[0].function.name == "read"
    mock.scenario(TURN)
    text = post_raw(mock.url + "/v1/chat/completions", chat_body(stream=True, stream_options={"include_usage": True}))
    events = sse_events(text.replace("data: [DONE]", ""))
    for _, data in events:
        validate(ChatCompletionChunk, data)
    assert "[DONE]" in text
    mock.scenario(TURN)
    chunks = list(client(mock.url).chat.completions.create(**chat_body(stream=True)))
    assert any(c.choices and c.choices[0].delta.tool_calls for c in chunks)


def test_chat_cache_reads_on_a_repeated_request(mock):
    c = client(mock.url)
    c.chat.completions.create(**chat_body())
    again = c.chat.completions.create(**chat_body())
    assert again.usage.prompt_tokens_details.cached_tokens > 0


def test_responses_plain_reply_validates_and_carries_encrypted_reasoning(mock):
    mock.scenario(TURN)
    raw = client(mock.url).responses.with_raw_response.create(**responses_body())
    response = validate(Response, raw.http_response.json())
    reasoning = response.output[0]
    assert reasoning.type == "reasoning" and reasoning.encrypted_content
    call = response.output[-1]
    second = client(mock.url).responses.create(
        **responses_body(
            input=responses_body()["input"]
            + [item.model_dump(exclude_none=True) for item in response.output if item.type != "message"]
            + [{"type": "function_call_output", "call_id": call.call_id, "output": "hello"}]
        )
    )
    assert second.output_text == "Done."


def test_responses_every_streamed_event_validates(mock):
    mock.scenario(TURN)
    text = post_raw(mock.url + "/v1/responses", responses_body(stream=True))
    events = sse_events(text)
    for name, data in events:
        event = validate(ResponseStreamEvent, data)
        assert event.type == name
    assert events[-1][0] == "response.completed"
    mock.scenario(TURN)
    with client(mock.url).responses.stream(**responses_body()) as stream:
        final = stream.get_final_response()
    assert final.output[-1].type == "function_call"


def test_responses_cache_reads_on_a_repeated_request(mock):
    c = client(mock.url)
    body = responses_body(reasoning=None, include=None)
    c.responses.create(**body)
    again = c.responses.create(**body)
    assert again.usage.input_tokens_details.cached_tokens > 0


@pytest.mark.parametrize(
    "kind,error",
    [
        ({"kind": "rate_limit", "retry_after_secs": 0}, openai.RateLimitError),
        ({"kind": "server_error"}, openai.InternalServerError),
        ({"kind": "overloaded"}, openai.InternalServerError),
        ({"kind": "context_length"}, openai.BadRequestError),
    ],
)
@pytest.mark.parametrize("route", ["chat", "responses"])
def test_error_faults_raise_the_sdks_error_class(mock, kind, error, route):
    mock.post("/_mock/faults", kind)
    c = client(mock.url)
    with pytest.raises(error) as raised:
        if route == "chat":
            c.chat.completions.create(**chat_body())
        else:
            c.responses.create(**responses_body())
    assert "message" in raised.value.body, raised.value.body


@pytest.mark.parametrize(
    "kind",
    [
        {"kind": "malformed", "at_event": 2},
        {"kind": "stream_error", "after_events": 2},
        {"kind": "hang"},
        {"kind": "stall_after", "events": 2},
    ],
)
def test_stream_faults_surface_as_errors_in_the_sdk(mock, kind):
    mock.post("/_mock/faults", kind)
    with pytest.raises(Exception) as raised:
        with client(mock.url, timeout=1.0).responses.stream(**responses_body()) as stream:
            stream.get_final_response()
    if kind["kind"] in ("hang", "stall_after"):
        assert "Timeout" in type(raised.value).__name__, repr(raised.value)


def test_cut_and_slow_streams(mock):
    mock.post("/_mock/faults", {"kind": "slow", "delay_ms": 10})
    assert client(mock.url).responses.create(**responses_body()).output
    mock.post("/_mock/faults", {"kind": "cut_after", "events": 3})
    with pytest.raises(Exception):
        with client(mock.url).responses.stream(**responses_body()) as stream:
            stream.get_final_response()


def test_prompt_cache_diagnosis_and_pre_warm_validate_as_responses(mock):
    """`prompt_cache_options.comparison_response_id` → `Response.prompt_cache_diagnostics`, and
    `prompt_cache_options.prewarm` (openai-python `PromptCacheOptions`), answered by strata-mock
    and validated strictly as `Response` / `ResponseStreamEvent`."""
    from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
    from test_request_bodies import strict_typed_dict

    mock.scenario('[[turn]]\ntext = "First."\n[[turn]]\ntext = "Second."\n')
    c = client(mock.url)
    base = responses_body(model="gpt-6", reasoning=None, include=None)
    warm = {**base, "prompt_cache_options": {"prewarm": True}}
    strict_typed_dict(ResponseCreateParamsNonStreaming, warm)
    warmed = validate(Response, c.responses.with_raw_response.create(**warm).http_response.json())
    assert warmed.output == [] and warmed.usage.output_tokens == 0
    first = validate(Response, c.responses.with_raw_response.create(**base).http_response.json())
    assert first.output_text == "First.", "the pre-warm took no turn"
    assert first.usage.input_tokens_details.cached_tokens > 0, "the pre-warm filled the cache"
    changed = {
        **base,
        "instructions": "You are a terse agent. " * 400,
        "prompt_cache_options": {"comparison_response_id": first.id},
    }
    strict_typed_dict(ResponseCreateParamsNonStreaming, changed)
    second = validate(Response, c.responses.with_raw_response.create(**changed).http_response.json())
    diagnosis = second.prompt_cache_diagnostics
    assert diagnosis.type == "cache_miss" and diagnosis.reason == "input_changed", diagnosis
    assert diagnosis.cache_missed_tokens > 0
    text = post_raw(mock.url + "/v1/responses", {**changed, "stream": True})
    events = sse_events(text)
    for name, data in events:
        assert validate(ResponseStreamEvent, data).type == name
    completed = events[-1][1]["response"]
    assert completed["prompt_cache_diagnostics"]["reason"] == "input_changed"
    gone = c.responses.create(**{**base, "prompt_cache_options": {"comparison_response_id": "resp_gone"}})
    assert gone.prompt_cache_diagnostics.type == "comparison_response_not_found"


def test_a_configuration_update_item_validates_as_a_beta_input(mock):
    """An effort change as a `configuration_update` input item (openai-python beta
    `BetaResponseConfigurationUpdateItemParam`): the beta request type accepts strata's shape,
    the beta client sends it, and strata-mock's answer validates."""
    from openai.types.beta.response_create_params import ResponseCreateParamsNonStreaming as Beta
    from test_request_bodies import strict_typed_dict

    mock.scenario('[[turn]]\ntext = "Looked."\n[[turn]]\ntext = "Briefly."\n')
    body = responses_body(model="gpt-6", include=None, reasoning={"effort": "high"})
    body["input"] = body["input"] + [
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Looked.", "annotations": []}],
            "status": "completed",
            "id": "msg_1",
        },
        {"role": "user", "content": [{"type": "input_text", "text": "Now briefly."}]},
        {"type": "configuration_update", "reasoning": {"effort": "low"}},
    ]
    strict_typed_dict(Beta, body)
    raw = client(mock.url).beta.responses.with_raw_response.create(**body)
    assert raw.http_response.json()["output"][0]["content"][0]["text"] == "Briefly."
