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


def test_cache_diagnosis_and_pre_warm_validate_as_beta_messages(mock):
    """The beta shapes strata-mock answers (cache diagnosis, `max_tokens: 0`), sent through the
    SDK's beta client with the beta header the body needs, validated as `BetaMessage` and
    `BetaRawMessageStreamEvent`."""
    from anthropic.types.beta import BetaMessage, BetaRawMessageStreamEvent

    mock.scenario('[[turn]]\ntext = "First."\n[[turn]]\ntext = "Second."\n')
    beta = client(mock.url).beta.messages
    first = beta.with_raw_response.create(
        **body(diagnostics={"previous_message_id": None}), betas=["cache-diagnosis-2026-04-07"]
    )
    first = validate(BetaMessage, first.http_response.json())
    assert first.diagnostics is None  # nothing to compare on the first turn
    changed_system = [{**SYSTEM[0], "text": "You are a terse agent. " * 400}]
    second = beta.with_raw_response.create(
        **body(system=changed_system, diagnostics={"previous_message_id": first.id}),
        betas=["cache-diagnosis-2026-04-07"],
    )
    second = validate(BetaMessage, second.http_response.json())
    reason = second.diagnostics.cache_miss_reason
    assert reason.type == "system_changed", reason
    assert reason.cache_missed_input_tokens > 0
    unknown = beta.create(
        **body(diagnostics={"previous_message_id": "msg_unknown"}), betas=["cache-diagnosis-2026-04-07"]
    )
    assert unknown.diagnostics.cache_miss_reason.type == "previous_message_not_found"

    # Streamed: the diagnosis rides on message_start's message.
    raw = post_raw(
        mock.url + "/v1/messages",
        body(stream=True, system=changed_system, diagnostics={"previous_message_id": first.id}),
        {"x-api-key": "k", "anthropic-version": "2023-06-01", "anthropic-beta": "cache-diagnosis-2026-04-07"},
    )
    for name, data in sse_events(raw):
        if name != "ping":
            validate(BetaRawMessageStreamEvent, data)
    start = next(data for name, data in sse_events(raw) if name == "message_start")
    assert start["message"]["diagnostics"]["cache_miss_reason"]["type"] == "system_changed"

    # A pre-warm: max_tokens 0 generates nothing.
    warm = validate(BetaMessage, beta.with_raw_response.create(**body(max_tokens=0, thinking={"type": "disabled"})).http_response.json())
    assert warm.content == [] and warm.usage.output_tokens == 0
    assert warm.usage.cache_read_input_tokens > 0


def test_a_system_message_carrying_only_an_effort_validates(mock):
    """`role: "system"` with `output_config` alone (beta `mid-conversation-output-config-2026-07-01`),
    as strata says an effort change: the SDK's beta types accept the request and the mock's
    answer validates as a `BetaMessage`."""
    from anthropic.types.beta import BetaMessage
    from anthropic.types.beta.message_create_params import MessageCreateParamsNonStreaming
    from test_request_bodies import strict_typed_dict

    mock.scenario('[[turn]]\ntext = "Briefly."\n')
    request = body(
        thinking={"type": "adaptive"},
        output_config={"effort": "high"},
        messages=[
            {"role": "user", "content": "Look at a.txt"},
            {"role": "assistant", "content": "Looked."},
            {"role": "user", "content": "Now briefly."},
            {"role": "system", "output_config": {"effort": "low"}},
        ],
    )
    strict_typed_dict(MessageCreateParamsNonStreaming, request)
    raw = client(mock.url).beta.messages.with_raw_response.create(
        **request, betas=["mid-conversation-output-config-2026-07-01"]
    )
    validate(BetaMessage, raw.http_response.json())


def test_a_message_thread_continues_and_an_expired_one_raises_thread_not_found(mock):
    """Message threads through the SDK's beta client (beta `message-threads-2026-08-12`): a
    create, a continue carrying only the new turn (no system, no tools) that the mock answers
    as the whole conversation, and, five minutes after the thread's last request on the mock's
    clock, a continue the SDK raises as `ThreadNotFoundError` (404 `thread_not_found`)."""
    from anthropic.types.beta import BetaMessage

    mock.scenario('[[turn]]\ntext = "First."\n[[turn]]\ntext = "Second."\n[[turn]]\ntext = "Third."\n')
    beta = client(mock.url).beta.messages
    betas = ["message-threads-2026-08-12"]
    first = validate(
        BetaMessage,
        beta.with_raw_response.create(**body(thread={"type": "create"}), betas=betas).http_response.json(),
    )
    new_turn = [{"role": "user", "content": "And now?"}]
    second = beta.with_raw_response.create(
        model=MODEL,
        max_tokens=2048,
        messages=new_turn,
        thinking={"type": "enabled", "budget_tokens": 1024},
        thread={"type": "continue", "previous_message_id": first.id},
        betas=betas,
    )
    second = validate(BetaMessage, second.http_response.json())
    assert second.content[0].text == "Second."
    # The whole conversation was read from the cache the first request wrote.
    assert second.usage.cache_read_input_tokens > 0
    mock.post("/_mock/clock/advance", {"seconds": 301})
    from anthropic.types import ThreadNotFoundError

    with pytest.raises(ThreadNotFoundError) as refused:
        beta.create(
            model=MODEL,
            max_tokens=2048,
            messages=new_turn,
            thread={"type": "continue", "previous_message_id": second.id},
            betas=betas,
        )
    assert refused.value.status_code == 404
    assert refused.value.error_code == "thread_not_found"
