"""`handrail serve`'s HTTP hooks: `POST /hooks/<harness>` answers the same events as
the command hook, decided by the same function (`runs.gate_store.judged`) against the
server's own run store, as the person the request's token names.

Claude Code posts its hook JSON (the command hook's stdin) and reads the answer the
command would print: 200 with the same JSON, or 200 with an empty body for "no
decision". A body the gate cannot read, or a judgement that fails, is refused in the
blocking form while a run could be the caller's, and is otherwise 400 with
`{"error": ...}` (gate/http_refusals.py): Claude Code reads any non-2xx as "go on".

Cursor, Gemini CLI and Codex run command hooks only: `handrail gate EVENT --harness H
--server URL` posts their hook JSON as it came to `/hooks/<harness>`, whose
`hook_event_name` says which event it is, and prints the answer: 200 with the JSON the
command would print (Gemini CLI's and Cursor's `{}` included); a refusal the command would
make by its exit code is `{"exitCode", "stderr"}`, which the command exits with.

git's hooks have no HTTP form; `handrail gate pre-commit --server URL` posts
`{"hook", "args", "input", "cwd"}` to `/hooks/git` and the answer is
`{"exitCode", "stderr"}`, what the command hook then exits with.

The options a command hook takes as flags are query parameters here, so that one
settings entry carries them: `require-run=WORKFLOW`, `stop-limit=N`, `reminder=off`,
`on-error=allow|deny`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from handrail.gate import (
    Answer,
    HookInputError,
    active_marks,
    claude_code,
    codex,
    cursor,
    effects,
    gemini,
    git_hooks,
    hook_input,
    http_refusals,
    outages,
)
from handrail.gate.fingerprint import Fingerprints
from handrail.gate.hook import replay_outages
from handrail.gate.hook_failures import store_failed
from handrail.gate.hook_store import protected_paths
from handrail.gate.http_refusals import RUN_HEADER
from handrail.home import handrail_home
from handrail.model.request import Request
from handrail.runs import gate_store
from handrail.runs.gate import Decision, Options

if TYPE_CHECKING:
    from handrail.runs import Runs
    from handrail.runs.gate import GateEvent

log = logging.getLogger("handrail.gate.http")
JSON_HARNESSES = ("cursor", "gemini", "codex")
HARNESSES = ("claude-code", "git", *JSON_HARNESSES)
MAX_BODY = hook_input.MAX_INPUT
QUERY = ("require-run", "stop-limit", "reminder", "on-error", "driven-from", "driven-run")


class Posted(NamedTuple):
    """An HTTP answer: its status and JSON body (empty: no body), and its headers:
    `Handrail-Run: active` when a run of the caller holds the folder, which a relaying
    command keeps as a mark (gate/active_marks.py) for when the server cannot answer."""

    status: int
    body: bytes
    headers: Mapping[str, str] = {}


ACTIVE_RUN = {RUN_HEADER: "active"}


class HookServer:
    """The hooks of one server: its runs (and their store), and what its agents may not
    touch (the store, HANDRAIL_HOME, the server's workflow folders)."""

    def __init__(self, runs: Runs, database: str | None, workflow_folders: Sequence[str] = ()) -> None:
        self.runs = runs
        self.protected = protected_paths(database, tuple(workflow_folders))
        self.home = str(handrail_home())  # a server's environment does not change: found once
        self.fingerprints = Fingerprints()  # the after-tool check's "nothing changed" without git

    def answer(
        self, harness: str, body: bytes | None, query: Mapping[str, str], person: str | None
    ) -> Posted:
        """`body` None: one over the limit, not read."""
        if harness not in HARNESSES:
            known = ", ".join(f"/hooks/{name}" for name in HARNESSES)
            return _error(404, f"no hooks for harness '{harness[:60]}': the server answers {known}")
        try:
            return self._answer(harness, body, query, person)
        except Exception as exc:  # the last guard: a bug in the refusal too still refuses
            log.warning("gate: a hook failed past its own guards: %r", exc)
            text = http_refusals.refused_text(http_refusals.reason_of(exc))
            return Posted(*http_refusals.refusal(harness, None, None, text))

    def _answer(
        self, harness: str, body: bytes | None, query: Mapping[str, str], person: str | None
    ) -> Posted:
        try:
            if body is None:
                raise HookInputError(f"hook input is larger than {MAX_BODY} bytes")
            options, on_error = options_of(query)
            more: list[GateEvent] = []
            warnings: list[str] = []
            if harness == "git":
                name, event, warnings = _git_input(body)
            elif harness in JSON_HARNESSES:
                name, events = _json_input(harness, body)
                if not events:  # the gate's own words sent back as a prompt: nothing to decide
                    return _posted(harness, _adapter(harness).answer(name, Decision("allow")))
                event, more = events[0], events[1:]
            else:
                name, event = claude_code.read_posted(body)
        except Exception as exc:  # HookInputError, or a shape no reader foresaw: never a 500
            return self.unreadable(harness, body, exc, person)
        seen: list[str] = []
        try:
            decision = self.decide(harness, event, options, person, more, seen)
        except Exception as exc:  # the store cannot be read, or a bug: refused while a run may be active
            return self.undecided(harness, name, event, exc, on_error, options.require_run, person)
        if harness == "git":
            answer = git_hooks.answer(decision, warnings)
        elif harness in JSON_HARNESSES:
            answer = _adapter(harness).answer(name, decision)
        else:
            answer = claude_code.answer(name, decision)
        return _posted(harness, answer)._replace(headers=ACTIVE_RUN if seen else {})

    def unreadable(self, harness: str, body: bytes | None, exc: Exception, person: str | None) -> Posted:
        """A body the gate cannot read: the blocking form while a run could be the
        caller's, else 400 naming the problem."""
        if not isinstance(exc, HookInputError):
            log.warning("gate: cannot read a hook body: %r", exc)
        reason = http_refusals.reason_of(exc)
        owner = self.runs.owner(Request(owner=person))
        cwd = http_refusals.readable_cwd(body)
        if not http_refusals.run_active(self.runs.store, self.home, cwd, owner):
            return _error(400, f"handrail gate: {reason}")
        events = {} if harness == "git" else _events(harness)
        event = http_refusals.named_event(body, events)
        kind = events[event][1] if event is not None else None
        return Posted(
            *http_refusals.refusal(harness, event, kind, http_refusals.refused_text(reason)), ACTIVE_RUN
        )

    def undecided(
        self,
        harness: str,
        name: str,
        event: GateEvent,
        exc: Exception,
        on_error: str,
        require: str | None,
        person: str | None,
    ) -> Posted:
        """`event` read but not judged: refused while a run is or may be active in its
        folder (and always with on-error=deny), else `store_failed`'s warning."""
        log.warning("gate: cannot judge a hook: %r", exc)
        owner = self.runs.owner(Request(owner=person))  # its outage record waits for this person's runs
        active = http_refusals.run_active(self.runs.store, self.home, event.cwd, owner)
        refuse = on_error == "deny" or bool(active) or (active is None and bool(require))
        if not refuse:
            return _posted(harness, store_failed(on_error, harness, name, event, exc, owner, False, require))
        reason = http_refusals.reason_of(exc)
        outages.keep(event.cwd, event.kind, "deny", reason, owner=owner)
        text = http_refusals.refused_text(reason)
        return Posted(*http_refusals.refusal(harness, name, event.kind, text), ACTIVE_RUN)

    def decide(
        self,
        harness: str,
        event: GateEvent,
        options: Options,
        person: str | None,
        more: Sequence[GateEvent] = (),
        seen: list[str] | None = None,
    ) -> Decision:
        """As the command hook decides: the judgement, then what the tool call did
        (gate/effects.py). The workspace checked is the run's own, as its row says, found
        because it holds the posted `cwd` and is this person's: a request names no other
        folder the server reads or writes."""
        owner = self.runs.owner(Request(owner=person))
        store = self.runs.store
        seen = [] if seen is None else seen
        judged = gate_store.judged(store, event, options, self.protected, [event.cwd], owner, more, seen)
        active_marks.note(self.home, seen, [event.cwd], forget=False)
        decision = judged.decision
        if harness != "git":  # git's hooks refuse ref updates; what a tool call did is checked around it
            decision = effects.follow(
                store, event, judged, options, self.protected, self.home, self.fingerprints
            )
        replay_outages(store, [event.cwd], owner, self.home)
        return decision


def options_of(query: Mapping[str, str]) -> tuple[Options, str]:
    """The decision's options and `on-error` from the query; a word it does not know is
    refused, so that a typo is seen rather than quietly ignored."""
    unknown = sorted(set(query) - set(QUERY))
    if unknown:
        raise HookInputError(f"unknown query parameter '{unknown[0][:40]}' (known: {', '.join(QUERY)})")
    limit_text = query.get("stop-limit", "3")
    if not (limit_text.isdigit() and 1 <= int(limit_text) <= 7):
        raise HookInputError(f"stop-limit '{limit_text[:20]}' is not a number from 1 to 7")
    reminder = query.get("reminder", "on")
    if reminder not in ("on", "off"):
        raise HookInputError(f"reminder '{reminder[:20]}' is neither on nor off")
    on_error = query.get("on-error", "allow")
    if on_error not in ("allow", "deny"):
        raise HookInputError(f"on-error '{on_error[:20]}' is neither allow nor deny")
    need = query.get("require-run") or None
    driven = query.get("driven-from")
    if driven is not None and not driven.isdigit():
        raise HookInputError(f"driven-from '{driven[:20]}' is not a number of steps")
    options = Options(
        require_run=need,
        reminder=reminder == "on",
        stop_limit=int(limit_text),
        driven_from=int(driven) if driven is not None else None,
        driven_run=(query.get("driven-run") or "")[:100] or None,
    )
    return options, on_error


def _adapter(harness: str) -> Any:
    return {"cursor": cursor, "gemini": gemini, "codex": codex}[harness]


def _events(harness: str) -> Mapping[str, tuple[str, Any]]:
    """The command's events of a harness with a JSON contract, and their posted names."""
    return claude_code.EVENTS if harness == "claude-code" else _adapter(harness).EVENTS


def _json_input(harness: str, body: bytes) -> tuple[str, list[GateEvent]]:
    """The command's event that a posted hook JSON names, and the gate's events of it."""
    adapter = _adapter(harness)
    said = hook_input.parse(body).get("hook_event_name")
    event = next((event for event, (name, _) in adapter.EVENTS.items() if name == said), None)
    if event is None:
        raise HookInputError(f"hook_event_name is {hook_input.shown(said)}, not an event the gate answers")
    events: list[GateEvent] = adapter.read_events(body, event)
    return event, events


def _git_input(body: bytes) -> tuple[str, GateEvent, list[str]]:
    try:
        posted = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise HookInputError("hook input is not JSON") from None
    except RecursionError:
        raise HookInputError("hook input nests too deep to read") from None
    if not isinstance(posted, dict):
        raise HookInputError("hook input is not a JSON object")
    hook, args, text, cwd = (posted.get(key) for key in ("hook", "args", "input", "cwd"))
    if hook not in git_hooks.HOOKS:
        raise HookInputError(f"hook is not one of {', '.join(git_hooks.HOOKS)}")
    if not (isinstance(args, list) and all(isinstance(arg, str) for arg in args)):
        raise HookInputError("args is not a list of strings")
    if not isinstance(text, str) or not isinstance(cwd, str) or not cwd.startswith("/"):
        raise HookInputError("input is not a string, or cwd is not an absolute path")
    # only pre-push's arguments (the remote) are read: commit-msg's names a file on the
    # client's machine, which the server does not open
    event, warnings = git_hooks.read_input(hook, args if hook == "pre-push" else [], text.encode(), cwd)
    return hook, event, warnings


def _posted(harness: str, answer: Answer) -> Posted:
    return Posted(*http_refusals.posted(harness, answer))


def _error(status: int, message: str) -> Posted:
    return Posted(status, _dump({"error": message}))


def _dump(body: Mapping[str, Any]) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
