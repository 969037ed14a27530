"""anthropic-sdk-python (requirements.txt) against strata-mock's Messages route."""

import anthropic
import pytest
from anthropic.types import Message, RawMessageStreamEvent

from conftest import post_raw, sse_events, validate

MODEL = "claude-sonnet-4-5"
TOOLS = [
    {
        "name": "read",
        "description": "Read a file",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]
SYSTEM = [{"type": "text", "text": "You are a careful agent. " * 400, "cache_control": {"type": "ephemeral"}}]
TURN = '[[turn]]\nthinking = "Read it first."\ntext = "Reading."\n[[turn.tool_call]]\ntool = "read"\nargs = { path = "a.txt" }\n[[turn]]\ntext = "Done."\n'


def client(url):
    return anthropic.Anthropic(base_url=url, api_key="sk-ant-test", max_retries=0)


def body(**extra):
    return {
        "model": MODEL,
        "max_tokens": 2048,
        "system": SYSTEM,
        "tools": TOOLS,
        "messages": [{"role": "user", "content": "Look at a.txt"}],
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        **extra,
    }


def test_plain_reply_with_thinking_and_a_tool_call_validates(mock):
    mock.scenario(TURN)
    raw = client(mock.url).messages.with_raw_response.create(**body())
    message = validate(Message, raw.http_response.json())
    kinds = [block.type for block in message.content]
    assert kinds == ["thinking", "text", "tool_use"], kinds
    assert message.content[0].signature
    assert message.stop_reason == "tool_use"


def test_every_streamed_event_validates_and_the_sdk_assembles_the_turn(mock):
    mock.scenario(TURN)
    raw = post_raw(
        mock.url + "/v1/messages",
        body(stream=True),
        {"x-api-key": "k", "anthropic-version": "2023-06-01"},
    )
    events = sse_events(raw)
    assert events, raw
    for name, data in events:
        if name == "ping":
            # Not a RawMessageStreamEvent: the SDK skips it. Document: Anthropic "Streaming
            # Messages", "Ping events" (docs.anthropic.com/en/docs/build-with-claude/streaming).
            assert data == {"type": "ping"}, data
            continue
        event = validate(RawMessageStreamEvent, data)
        assert event.type == name
    mock.reset()
    mock.scenario(TURN)
    with client(mock.url).messages.stream(**body()) as stream:
        final = stream.get_final_message()
    validate(Message, final.model_dump(mode="json", exclude_unset=True))
    assert [b.type for b in final.content] == ["thinking", "text", "tool_use"]


def test_a_tool_turn_with_the_signature_replayed_is_accepted(mock):
    mock.scenario(TURN)
    c = client(mock.url)
    first = c.messages.create(**body())
    call = next(b for b in first.content if b.type == "tool_use")
    second = c.messages.create(
        **body(
            messages=[
                {"role": "user", "content": "Look at a.txt"},
                {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "hello"}]},
            ]
        )
    )
    assert second.content[-1].text == "Done."


def test_a_repeated_request_reads_the_cache(mock):
    c = client(mock.url)
    first = c.messages.create(**body(thinking={"type": "disabled"}))
    again = c.messages.create(**body(thinking={"type": "disabled"}))
    assert first.usage.cache_creation_input_tokens > 0
    assert again.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens


@pytest.mark.parametrize(
    "kind,error",
    [
        ({"kind": "rate_limit", "retry_after_secs": 0}, anthropic.RateLimitError),
        ({"kind": "server_error"}, anthropic.InternalServerError),
        ({"kind": "overloaded"}, anthropic.APIStatusError),
        ({"kind": "context_length"}, anthropic.BadRequestError),
    ],
)
def test_error_faults_raise_the_sdks_error_class(mock, kind, error):
    mock.post("/_mock/faults", kind)
    with pytest.raises(error) as raised:
        client(mock.url).messages.create(**body())
    validate(anthropic.types.ErrorResponse, raised.value.body)


@pytest.mark.parametrize(
    "kind",
    [
        {"kind": "cut_after", "events": 3},
        {"kind": "malformed", "at_event": 2},
        {"kind": "stream_error", "after_events": 2},
    ],
)
def test_stream_faults_surface_as_errors_in_the_sdk(mock, kind):
    mock.post("/_mock/faults", kind)
    if kind["kind"] == "cut_after":
        # The SDK does not raise on a body that ends early; what it assembled has no
        # stop_reason, which is how a caller tells (strata reports `Truncated`).
        with client(mock.url).messages.stream(**body()) as stream:
            assert stream.get_final_message().stop_reason is None
        return
    with pytest.raises(Exception) as raised:
        with client(mock.url).messages.stream(**body()) as stream:
            stream.get_final_message()
    if kind["kind"] == "stream_error":
        assert isinstance(raised.value, anthropic.APIStatusError), raised.value
        assert "overloaded_error" in str(raised.value)


def test_slow_hang_and_stall_faults(mock):
    mock.post("/_mock/faults", {"kind": "slow", "delay_ms": 20})
    assert client(mock.url).messages.create(**body()).content
    for kind in ({"kind": "hang"}, {"kind": "stall_after", "events": 2}):
        mock.post("/_mock/faults", kind)
        c = anthropic.Anthropic(base_url=mock.url, api_key="k", max_retries=0, timeout=1.0)
        with pytest.raises(Exception) as raised:
            with c.messages.stream(**body()) as stream:
                stream.get_final_message()
        assert "Timeout" in type(raised.value).__name__, repr(raised.value)
