"""Shared fixtures: a strata-mock process, a recording server, strict validation helpers.

The vendors' SDKs judge strata's wire formats (README.md). Validation is strict: pydantic
strict mode, and every field the SDK's type does not declare is an error unless
`DOCUMENTED_EXTRAS` names the document it comes from (no silent allow-list).
"""

import http.server
import json
import os
import pathlib
import subprocess
import threading
import urllib.request

import pydantic
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
TARGET = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))

# Fields strata-mock or strata sends that the pinned SDK's types do not declare, each with
# the document it comes from. Keys are (SDK type name, field name).
DOCUMENTED_EXTRAS = {
    ("Response", "store"): "OpenAI API reference, Responses, 'The response object': the "
    "example object carries `store`; openai-python 3.57.0's Response type does not declare it",
}


def binary(name):
    path = TARGET / "debug" / name
    if not path.exists():
        subprocess.run(
            ["cargo", "build", "-q", "-p", name if name != "strata" else "strata-cli"],
            cwd=ROOT,
            check=True,
        )
    return path


@pytest.fixture(scope="session")
def mock_url():
    process = subprocess.Popen(
        [str(binary("strata-mock"))], stdout=subprocess.PIPE, text=True
    )
    url = process.stdout.readline().strip()
    assert url.startswith("http://"), url
    yield url
    process.terminate()
    process.wait(timeout=10)


class Mock:
    def __init__(self, url):
        self.url = url

    def post(self, path, body):
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method="POST")
        with urllib.request.urlopen(request) as response:
            return json.loads(response.read() or b"null")

    def reset(self):
        self.post("/_mock/reset", {})

    def scenario(self, toml):
        self.post("/_mock/scenario", toml)

    def fault(self, kind, **fields):
        self.post("/_mock/faults", {"kind": kind, **fields})

    def requests(self):
        with urllib.request.urlopen(self.url + "/_mock/requests") as response:
            return json.loads(response.read())


@pytest.fixture
def mock(mock_url):
    m = Mock(mock_url)
    m.reset()
    return m


def extras(model, path="$"):
    """Every field set on `model` (recursively) that its type does not declare."""
    found = []
    if isinstance(model, pydantic.BaseModel):
        for name in (model.model_extra or {}):
            found.append((type(model).__name__, name, f"{path}.{name}"))
        for name in type(model).model_fields:
            found += extras(getattr(model, name), f"{path}.{name}")
    elif isinstance(model, (list, tuple)):
        for i, item in enumerate(model):
            found += extras(item, f"{path}[{i}]")
    elif isinstance(model, dict):
        for key, item in model.items():
            found += extras(item, f"{path}.{key}")
    return found


def validate(type_, data):
    """`data` as `type_`, strictly: pydantic strict mode, no undeclared field."""
    # JSON mode, as the SDK reads the wire: enums from their values, bytes from base64.
    value = pydantic.TypeAdapter(type_).validate_json(json.dumps(data), strict=True)
    undeclared = [
        where
        for (owner, name, where) in extras(value)
        if (owner, name) not in DOCUMENTED_EXTRAS
    ]
    name = getattr(type_, "__name__", "the stream event union")
    assert not undeclared, f"fields the SDK's {name} does not declare: {undeclared}"
    return value


def sse_events(raw):
    """(event name, JSON data) of each SSE event in `raw`."""
    events = []
    for block in raw.replace("\r\n", "\n").split("\n\n"):
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if data:
            events.append((name, json.loads("\n".join(data))))
    return events


def post_raw(url, body, headers=None):
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"content-type": "application/json", **(headers or {})},
    )
    with urllib.request.urlopen(request) as response:
        return response.read().decode()


class Recorder(http.server.BaseHTTPRequestHandler):
    """Records each POST body and answers 400, so the SDK raises instead of parsing."""

    bodies = []
    headers = []

    def do_POST(self):
        length = int(self.headers.get("content-length", 0))
        Recorder.bodies.append((self.path, self.rfile.read(length)))
        Recorder.headers.append(dict(self.headers.items()))
        self.send_response(400)
        self.send_header("content-type", "application/json")
        body = b'{"error": {"type": "invalid_request_error", "message": "recorded"}}'
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def recorder():
    Recorder.bodies = []
    Recorder.headers = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", Recorder.bodies
    server.shutdown()
