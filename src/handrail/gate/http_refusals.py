"""What `POST /hooks/<harness>` answers when it cannot judge (spec/gate.md, "When the
gate cannot judge"): a body it cannot read (not JSON, nested too deep, too big, of the
wrong shape) or a judgement that fails (the store cannot be read, a bug).

Claude Code reads a non-2xx status of an HTTP hook, like a connection failure or a
timeout, as a non-blocking error: the action goes on. So while a run that could be
the caller's is active, the answer is 200 with the harness's blocking form and the
reason; only where no run is active (nothing to protect) is it 400 with
`{"error": ...}`. A run "could be the caller's" when it is the person's (the token's)
and, if the body gave a readable `cwd`, holds it; when the store cannot say, where the
gate last saw a run active (gate/active_marks.py). Never a 500.

The relayed harnesses (Cursor, Gemini CLI and Codex through `handrail gate ... --server`,
and git) get `{"exitCode", "stderr"}`: the relaying command exits with it, and exit 2
is every command hook's blocking error (git aborts on any non-zero exit).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from handrail.gate import Answer, HookInputError, active_marks, claude_code, hook_input
from handrail.runs import gate_store
from handrail.runs.gate import ACTIVE, Decision

if TYPE_CHECKING:
    from handrail.runs.gate import Verdict
    from handrail.store.base import RunStore

RUN_HEADER = "Handrail-Run"  # "active": a run of the caller holds the folder asked about
BLOCKING = 2  # a command hook's blocking error, what a relaying command exits with
# the first `"hook_event_name": "..."` of a body no reader can parse: the harness writes
# its own fields before the tool's input, and a key inside a string has its quotes escaped
NAMED = re.compile(rb'"hook_event_name"\s*:\s*"([A-Za-z]{1,40})"')
SCANNED = 1 << 16  # how much of an unreadable body is looked at for the event's name


def reason_of(exc: BaseException) -> str:
    """What could not be read or judged, in a line."""
    if isinstance(exc, RecursionError):
        return "hook input nests too deep to read"
    if isinstance(exc, HookInputError):
        return " ".join(str(exc).split())[:300]
    said = " ".join(str(exc).split())[:300]
    return f"{type(exc).__name__}: {said}" if said else type(exc).__name__


def readable_cwd(body: bytes | None) -> str | None:
    """The body's `cwd`, only when the body is a JSON object that names an absolute one."""
    if body is None:
        return None
    try:
        posted = hook_input.parse(body)
    except Exception:  # not an object: no cwd can be trusted from it
        return None
    cwd = posted.get("cwd")
    return cwd if isinstance(cwd, str) and cwd.startswith("/") else None


def named_event(body: bytes | None, events: Mapping[str, tuple[str, Any]]) -> str | None:
    """The command's event name a body says it is, read as far as it can be; None when
    it does not say."""
    if body is None:
        return None
    said: object = None
    try:
        said = hook_input.parse(body).get("hook_event_name")
    except Exception:  # unreadable: its first hook_event_name, as the harness wrote it
        found = NAMED.search(body[:SCANNED])
        said = found.group(1).decode() if found else None
    return next((event for event, (name, _) in events.items() if name == said), None)


def run_active(store: RunStore, home: str, cwd: str | None, owner: str | None) -> bool | None:
    """Whether an active run of `owner` holds `cwd` (any of theirs when `cwd` is None);
    None when the store cannot say and no mark says so either."""
    try:
        if cwd is None:
            return bool(store.list_runs(statuses=ACTIVE, owner=owner, limit=1))
        return bool(gate_store.holding(store, [cwd], owner))
    except gate_store.Tampered:  # a run holds it, whose row cannot be trusted
        return True
    except Exception:  # the store cannot be read: where the gate last saw a run
        if cwd is not None:
            return True if active_marks.marked(home, [cwd]) is not None else None
        folder = os.path.join(home, active_marks.FOLDER)
        return True if os.path.isdir(folder) and os.listdir(folder) else None


def refusal(harness: str, event: str | None, kind: str | None, text: str) -> tuple[int, bytes]:
    """200 with `harness`'s blocking form for `event` (None: unknown), saying `text`."""
    if harness != "claude-code":
        code = BLOCKING if harness != "git" else 1
        return 200, dump({"exitCode": code, "stderr": text})
    if event is not None:
        verdict: Verdict = "deny" if kind == "before-tool" else "block"
        said = claude_code.answer(event, Decision(verdict, text))
        if said.stdout:
            return 200, said.stdout.encode()
    # an event not known, or one with no refusal of its own: `decision: "block"` is what
    # Claude Code blocks by at every event that can be refused (PreToolUse's older form)
    return 200, dump({"decision": "block", "reason": text})


def refused_text(reason: str) -> str:
    return (
        f"handrail: the gate cannot judge this ({reason}) and a run is or may be active here; "
        "it is refused until the gate can judge. Tell the person."
    )


def posted(harness: str, answer: Answer) -> tuple[int, bytes]:
    """A command hook's answer as the HTTP hook sends it."""
    if harness == "git" or (answer.exit_code != 0 and harness != "claude-code"):
        return 200, dump({"exitCode": answer.exit_code, "stderr": answer.stderr})
    if answer.exit_code == BLOCKING:  # Claude Code's HTTP hook has no exit code: its JSON form
        return 200, dump({"decision": "block", "reason": answer.stderr.strip()})
    if answer.exit_code != 0:  # the command's non-blocking error
        return 400, dump({"error": answer.stderr.strip()})
    return 200, answer.stdout.encode()


def dump(body: Mapping[str, Any]) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
