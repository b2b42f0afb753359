"""`handrail gate EVENT --server URL`: the command hook asks a `handrail serve` (its
`POST /hooks/<harness>`, gate/http_hooks.py) instead of opening the run store, with
the person's token. The server decides with the same function the command would;
this module only carries the input there and the answer back.

A server that cannot be reached, or that refuses the request (401, 403, 5xx), is
treated as a store that cannot be read: `--on-error` says what happens.
"""

from __future__ import annotations

import http.client
import json
from typing import TYPE_CHECKING
from urllib.parse import urlencode, urlsplit

from handrail.gate import Answer

if TYPE_CHECKING:
    from handrail.gate import Args
    from handrail.runs.gate import GateEvent

TIMEOUT = 10.0  # seconds; a harness gives a hook more, and the server answers in milliseconds
MAX_REPLY = 1 << 20


class Unreachable(Exception):
    """The server did not answer, or refused to."""


def ask(args: Args, harness: str, event: GateEvent, data: bytes, warnings: list[str]) -> Answer:
    """The server's answer to one hook event; Unreachable when there is none to give."""
    status, reply = post(args, harness, event, data)
    if status == 400:  # input the server could not read: the command's own non-blocking error
        message = _error_of(reply) or "the server could not read the hook input"
        if harness == "git":
            from handrail.gate import git_hooks  # lazy: a hook's start-up

            return git_hooks.warning(message, False)
        return Answer("", message + "\n", 1)
    if harness != "git":
        return Answer(reply.decode("utf-8", "replace"), "", 0)
    try:
        answered = json.loads(reply)
        code, stderr = int(answered["exitCode"]), str(answered["stderr"])
    except (ValueError, KeyError, TypeError):
        raise Unreachable(f"{args.server[:100]} did not answer with the gate's JSON") from None
    said = "".join(f"handrail gate: {warning}\n" for warning in warnings)
    return Answer("", said + stderr, code)


def post(args: Args, harness: str, event: GateEvent, data: bytes) -> tuple[int, bytes]:
    server: str = args.server
    url = urlsplit(server)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise Unreachable(f"--server {server[:100]!r} is not an http:// or https:// address")
    query = {"stop-limit": str(args.stop_limit), "on-error": args.on_error}
    if args.require_run:
        query["require-run"] = args.require_run
    if args.no_reminder:
        query["reminder"] = "off"
    path = f"{url.path.rstrip('/')}/hooks/{harness}?{urlencode(query)}"
    body = data
    if harness == "git":
        text = data.decode("utf-8", "replace")
        body = json.dumps({"hook": args.event, "args": args.args, "input": text, "cwd": event.cwd}).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    token = args.token or _environment_token()
    if token:
        headers["Authorization"] = f"Bearer {token}"
    kind = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
    try:
        connection = kind(url.hostname, url.port, timeout=TIMEOUT)
    except ValueError as exc:  # a port that is not a number
        raise Unreachable(f"--server {server[:100]!r}: {exc}") from None
    try:
        connection.request("POST", path, body, headers)
        response = connection.getresponse()
        status, reply = response.status, response.read(MAX_REPLY + 1)
    except (OSError, http.client.HTTPException) as exc:
        raise Unreachable(f"cannot reach {server[:100]}: {exc or type(exc).__name__}") from None
    finally:
        connection.close()
    if status not in (200, 400):
        said = _error_of(reply)
        raise Unreachable(f"{server[:100]} answered {status}" + (f": {said}" if said else ""))
    return status, reply


def _error_of(reply: bytes) -> str:
    """The message of an error answer: ours (`error`) or a JSON-RPC refusal's."""
    try:
        body = json.loads(reply)
    except ValueError:
        return ""
    if not isinstance(body, dict):
        return ""
    said = body.get("error")
    if isinstance(said, dict):
        said = said.get("message")
    return " ".join(str(said).split())[:300] if said else ""


def _environment_token() -> str:
    from handrail.settings import Settings  # lazy: a hook's start-up

    return Settings.from_environment().token
