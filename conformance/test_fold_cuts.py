"""A fold cut short at any byte and resumed (strata-runtime's `fold_cuts` test cuts the fold's
lines at every byte and keeps each distinct body in fixtures/fold-cut-bodies.json): each body
is a valid request for the vendor's SDK, the SDK sends the same JSON, and its tool calls and
results pair up as the APIs demand (the SDK's types cannot say that; the API answers 400)."""

import json

import anthropic
import openai
import pytest

from conftest import ROOT
from test_request_bodies import sent_json, strict_typed_dict

ENTRIES = json.loads((ROOT / "conformance/fixtures/fold-cut-bodies.json").read_text())


def anthropic_unpaired(body):
    """Anthropic's rule: a user message's `tool_result`s answer `tool_use`s of the assistant
    message just before it, and every `tool_use` is answered in the next message."""

    def ids(message, kind, field):
        content = message.get("content")
        return [b[field] for b in content if b.get("type") == kind] if isinstance(content, list) else []

    problems = []
    messages = body["messages"]
    for at, message in enumerate(messages):
        before = ids(messages[at - 1], "tool_use", "id") if at else []
        problems += [f"result {i} answers no call" for i in ids(message, "tool_result", "tool_use_id") if i not in before]
        after = ids(messages[at + 1], "tool_result", "tool_use_id") if at + 1 < len(messages) else []
        problems += [f"call {i} unanswered" for i in ids(message, "tool_use", "id") if i not in after]
    return problems


def responses_unpaired(body):
    """The Responses rule: each `function_call_output` follows its `function_call`, and every
    `function_call` has an output."""
    calls, outputs, problems = [], [], []
    for item in body["input"]:
        if item.get("type") == "function_call":
            calls.append(item["call_id"])
        elif item.get("type") == "function_call_output":
            if item["call_id"] not in calls:
                problems.append(f"output {item['call_id']} follows no call")
            outputs.append(item["call_id"])
    return problems + [f"call {i} has no output" for i in calls if i not in outputs]


def test_the_fixture_holds_both_wires_folded_and_not():
    assert sorted(e["provider"] for e in ENTRIES) == ["anthropic", "anthropic", "openai", "openai"]


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["name"])
def test_a_cut_fold_resumes_into_a_valid_paired_request(entry, recorder):
    body = entry["body"]
    url, bodies = recorder
    if entry["provider"] == "anthropic":
        from anthropic.types.beta.message_create_params import MessageCreateParamsStreaming

        strict_typed_dict(MessageCreateParamsStreaming, body)
        assert anthropic_unpaired(body) == []
        client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
        with pytest.raises(anthropic.BadRequestError):
            client.beta.messages.create(**body)
    else:
        from openai.types.responses.response_create_params import ResponseCreateParamsStreaming

        strict_typed_dict(ResponseCreateParamsStreaming, body)
        assert responses_unpaired(body) == []
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
        with pytest.raises(openai.BadRequestError):
            client.responses.create(**body)
    assert sent_json(bodies) == body


def test_the_pairing_check_sees_a_result_without_its_call():
    """What a fold cut short used to leave: the first call omitted, its result kept."""
    anthropic_body = next(e["body"] for e in ENTRIES if e["provider"] == "anthropic" and "resumed" not in e["name"])
    broken = json.loads(json.dumps(anthropic_body))
    broken["messages"][1]["content"] = [{"type": "text", "text": "folded"}]
    assert anthropic_unpaired(broken) != []
    responses_body = next(e["body"] for e in ENTRIES if e["provider"] == "openai" and "resumed" not in e["name"])
    broken = json.loads(json.dumps(responses_body))
    broken["input"] = [i for i in broken["input"] if i.get("type") != "function_call"]
    assert responses_unpaired(broken) != []
