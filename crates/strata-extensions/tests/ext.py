"""A strata extension in Python (standard library only), whose behaviour the first argument
chooses: good, crash, hang, garbage, flood, huge, a slot name to claim with `claim:NAME`, or a
memory slot owner: `filter` (ingress_filter: results become a short note), `forget`
(forgetting: every offered result is masked). Its commands: `/events` (the events seen),
`/echo args` (`echo: args`; `/echo hang` never answers), `/op JSON` (sends the operation,
says `op: ok` or `op: refused: why`), `/help` (to be shadowed). In every mode a PreToolUse hook on a bash
command with `pick` asks `ui/select` and `ui/input` and adds what was answered as context,
and one with `rm -rf` asks `ui/confirm` and denies the call unless confirmed."""
import json
import sys

mode = sys.argv[1] if len(sys.argv) > 1 else "good"
name = sys.argv[2] if len(sys.argv) > 2 else "py"
next_id = 1000
events = []


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def call_full(method, params):
    global next_id
    next_id += 1
    send({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params})
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("id") == next_id and "method" not in message:
            return message


def call(method, params):
    return (call_full(method, params) or {}).get("result")


manifest = {
    "name": name,
    "version": "0.1",
    "events": ["*"],
    "hooks": ["PreToolUse"],
    "commands": [{"name": "events", "description": "events seen"},
                 {"name": "echo", "description": "says its arguments back"},
                 {"name": "op", "description": "sends an operation to the session runtime"},
                 {"name": "help", "description": "shadowed by a front end's built-in /help"}],
    "tools": [{"name": "shout", "description": "upper-cases", "parameters": {"type": "object"}}],
    "slots": [mode[len("claim:"):]] if mode.startswith("claim:")
    else ["ingress_filter"] if mode == "filter"
    else ["forgetting"] if mode == "forget" else [],
}

for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    params = message.get("params") or {}
    mid = message.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": 1, "manifest": manifest}})
        continue
    if method == "event":
        events.append(params["name"])
        continue
    if method == "shutdown":
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
        break
    if method == "hook":
        command = params["input"]["tool_input"].get("command", "")
        if mode == "crash":
            sys.exit(3)
        if mode == "hang":
            import time
            time.sleep(600)
        if mode == "garbage":
            sys.stdout.write("this is not json\n{\"half\": \n\x00\x01\x02\n")
        if mode == "flood":
            for i in range(2000):
                send({"jsonrpc": "2.0", "method": "ui/notify", "params": {"message": str(i)}})
            for i in range(50):
                send({"jsonrpc": "2.0", "id": 5000 + i, "method": "ui/confirm", "params": {"title": "t", "message": "m"}})
        if mode == "huge":
            sys.stdout.write('{"jsonrpc": "2.0", "id": 99999, "result": "' + "x" * (100 * 1024 * 1024) + '"}\n')
            sys.stdout.flush()
        answer = {}
        if "pick" in command:
            picked = call("ui/select", {"title": "Which one?", "options": ["alpha", "beta"]}) or {}
            typed = call("ui/input", {"title": "Why?", "placeholder": "a reason"}) or {}
            send({"jsonrpc": "2.0", "method": "ui/notify",
                  "params": {"message": "picked %s" % picked.get("index"), "level": "info"}})
            answer = {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                             "additionalContext": "picked=%s text=%s" % (picked.get("index"), typed.get("text"))}}
        if "rm -rf" in command:
            ok = call("ui/confirm", {"title": "Destructive command", "message": command})
            send({"jsonrpc": "2.0", "method": "ui/status", "params": {"text": "guard asked"}})
            if not (ok or {}).get("confirmed"):
                answer = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                                 "permissionDecisionReason": "the user said no to: " + command}}
        send({"jsonrpc": "2.0", "id": mid, "result": answer})
        continue
    if method == "memory/ingress_filter":
        output = params["output"]
        send({"jsonrpc": "2.0", "id": mid, "result": {"output": "filtered: %d characters of %s" % (len(output), params["toolName"])}})
        continue
    if method == "memory/forgetting":
        mask = [{"id": c["id"], "stub": "[forgotten: " + c["call"] + "]"} for c in params["candidates"]]
        send({"jsonrpc": "2.0", "id": mid, "result": {"mask": mask}})
        continue
    if method == "command" and params["name"] == "echo":
        if params["args"] == "hang":
            import time
            time.sleep(600)
        send({"jsonrpc": "2.0", "id": mid, "result": {"text": "echo: " + params["args"]}})
        continue
    if method == "command" and params["name"] == "op":
        answer = call_full("op", json.loads(params["args"])) or {}
        if "error" in answer:
            text = "op: refused: " + answer["error"]["message"]
        else:
            text = "op: ok"
        send({"jsonrpc": "2.0", "id": mid, "result": {"text": text}})
        continue
    if method == "command":
        send({"jsonrpc": "2.0", "id": mid, "result": {"text": ",".join(events)}})
        continue
    if method == "tool":
        send({"jsonrpc": "2.0", "id": mid, "result": {"text": params["arguments"]["text"].upper(), "isError": False}})
        continue
    if mid is not None:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no method"}})
