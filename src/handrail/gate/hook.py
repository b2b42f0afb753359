"""The hook side of `handrail gate`: its options, and one event read, decided and
answered. Loaded by cli/gate.py, and directly by handrail.entry when the command is
a hook event, so that a hook (run on every tool call) loads neither the command
table nor any layer it does not use: the store, the policy and the harness adapter
load when used.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import argparse
    from typing import Any

    from handrail.gate import Answer, Args  # lazy: a hook's start-up
    from handrail.runs.gate import Decision, GateEvent, Verdict  # lazy: a hook's start-up
    from handrail.store.base import RunStore


HARNESSES = ("claude-code", "git", "cursor", "gemini", "codex")
CLAUDE_EVENTS = (
    "session-start",
    "user-prompt-submit",
    "pre-tool-use",
    "post-tool-use",
    "post-tool-use-failure",
    "stop",
    "subagent-stop",
    "config-change",
)
GIT_HOOKS = ("pre-commit", "commit-msg", "pre-push", "reference-transaction")
# the events of the other harnesses that Claude Code does not name alike (each
# adapter's EVENTS holds its own list; tests/gate holds these in step with them)
OTHER_EVENTS = (
    "before-agent",
    "before-tool",
    "after-tool",
    "after-agent",
    "before-shell-execution",
    "before-mcp-execution",
    "before-read-file",
    "pre-compress",
)
MANAGE = ("install", "uninstall", "doctor")


HOOK_EVENTS = (*CLAUDE_EVENTS, *GIT_HOOKS, *OTHER_EVENTS)


def add_arguments(gate: argparse.ArgumentParser) -> None:
    gate.add_argument(
        "event",
        choices=[*HOOK_EVENTS, *MANAGE],
        metavar="EVENT",
        help="the hook event (" + ", ".join(HOOK_EVENTS) + "), or install, uninstall, doctor",
    )
    gate.add_argument("args", nargs="*", metavar="ARG", help="git's hook arguments; for install: the harness")
    gate.add_argument("--harness", choices=HARNESSES, default=None, help="whose hook input this is")
    gate.add_argument(
        "--database",
        default=None,
        metavar="URL",
        help="the run store, as for `handrail serve` "
        "(default $HANDRAIL_DATABASE_URL, else ~/.handrail/handrail.db)",
    )
    gate.add_argument(
        "--server",
        default=None,
        metavar="URL",
        help="ask this `handrail serve` (e.g. http://127.0.0.1:8765) instead of opening the store",
    )
    gate.add_argument(
        "--token",
        default=None,
        metavar="TOKEN",
        help="with --server: the person's token (default $HANDRAIL_TOKEN)",
    )
    gate.add_argument(
        "--require-run",
        default=None,
        metavar="WORKFLOW",
        help="with no active run here, refuse edits and stopping until a run of WORKFLOW starts",
    )
    gate.add_argument(
        "--on-error",
        choices=["allow", "deny"],
        default="allow",
        help="when the gate cannot judge and no run is known to be active here: let the action "
        "through with a warning (default), or refuse it; with a run active it always refuses",
    )
    gate.add_argument(
        "--no-reminder", action="store_true", help="no reminder of the current step on each prompt"
    )
    gate.add_argument(
        "--stop-limit",
        type=_stop_limit,
        default=3,
        metavar="N",
        help="refuse a stop at most N times in a row per step (1 to 7, default 3)",
    )
    gate.add_argument(
        "--driven-from",
        type=int,
        default=None,
        metavar="N",
        help="a session `handrail drive` started for one step, when N steps were accepted: it may stop "
        "once the next one is",
    )
    gate.add_argument(
        "--driven-run",
        metavar="RUN",
        help="with --driven-from: the run it counts the steps of (a branch the session claims holds it "
        "as any session's)",
    )
    gate.add_argument(
        "--scope", choices=["project", "user"], default="project", help="install: which settings file"
    )
    gate.add_argument(
        "--dry-run", action="store_true", help="install, uninstall: say what would change, write nothing"
    )


def _stop_limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 7:  # Claude Code stops honouring stop hooks after 8 in a row
        import argparse  # lazy: only a wrong value needs it here

        raise argparse.ArgumentTypeError(f"{text!r} is not a stop limit from 1 to 7")
    return value


def run_hook(args: Args) -> int:
    harness = args.harness or ("git" if args.event in GIT_HOOKS else "claude-code")
    if (harness == "git") != (args.event in GIT_HOOKS) or (
        harness not in ("git", "claude-code") and args.event not in _adapter(harness).EVENTS
    ):
        print(f"handrail gate: {args.event} is not a {harness} hook event", file=sys.stderr)
        return 2
    try:
        answer = _hook(args, harness)
    except (Exception, KeyboardInterrupt) as exc:  # cannot judge: refused while a run may be active
        answer = cannot_judge(args, harness, exc)
    if answer.stdout:
        sys.stdout.write(answer.stdout)
        sys.stdout.flush()
    if answer.stderr:
        sys.stderr.write(answer.stderr)
    return answer.exit_code


def _hook(args: Args, harness: str) -> Answer:
    from handrail.gate import HookInputError  # lazy: a hook's start-up

    data = sys.stdin.buffer.read((1 << 20) + 1) if not sys.stdin.isatty() else b""
    warnings: list[str] = []
    if harness not in ("git", "claude-code"):
        return _json_hook(args, harness, data)
    try:
        if harness == "git":
            from handrail.gate import git_hooks  # lazy: a hook's start-up

            event, warnings = git_hooks.read_input(args.event, args.args, data, os.getcwd())
        else:
            from handrail.gate import claude_code  # lazy: a hook's start-up

            event = claude_code.read_input(data, args.event)
            if event.kind == "config":
                if args.server:
                    raise HookInputError("ConfigChange is answered from the run store; --server cannot")
                event = _settings_checked(event, args)
    except HookInputError as exc:
        return cannot_judge(args, harness, exc)
    if args.server:
        from handrail.gate import remote  # lazy: a hook's start-up

        try:
            return remote.ask(args, harness, event, data, warnings)
        except remote.Unreachable as exc:
            return store_failed(args.on_error, harness, args.event, event, exc, require=args.require_run)
    try:
        decision = _decide(args, event, harness)
    except Exception as exc:  # the store cannot be read, or a bug: refused while a run may be active
        return _undecided(args, harness, event, exc)
    if harness == "git":
        from handrail.gate import git_hooks  # lazy: a hook's start-up

        return git_hooks.answer(decision, warnings)
    from handrail.gate import claude_code  # lazy: a hook's start-up

    return claude_code.answer(args.event, decision)


def _settings_checked(event: GateEvent, args: Args) -> GateEvent:
    """A Claude Code settings change with the gate's hooks the settings no longer hold."""
    from handrail.gate import claude_settings  # lazy: only a settings change reads the settings
    from handrail.gate.claude_code import SETTINGS_SOURCES  # lazy: a hook's start-up

    if event.source not in SETTINGS_SOURCES:  # skills; managed policy, which no hook can refuse
        return event
    project = os.environ.get("CLAUDE_PROJECT_DIR") or event.cwd
    installed = claude_settings.installed_as(args.database, args.require_run, args.on_error)
    return event._replace(missing=claude_settings.missing_hooks(project, installed=installed))


def _adapter(harness: str) -> Any:
    """The adapter module of a harness with a JSON hook contract beside Claude Code's."""
    if harness == "cursor":
        from handrail.gate import cursor  # lazy: a hook's start-up

        return cursor
    if harness == "gemini":
        from handrail.gate import gemini  # lazy: a hook's start-up

        return gemini
    from handrail.gate import codex  # lazy: a hook's start-up

    return codex


def _json_hook(args: Args, harness: str, data: bytes) -> Answer:
    """Cursor, Gemini CLI, Codex: one tool call may be several actions (a patch that
    edits several files), the first that is not allowed deciding, or none."""
    from handrail.gate import HookInputError  # lazy: a hook's start-up

    adapter = _adapter(harness)
    try:
        events = adapter.read_events(data, args.event)
    except HookInputError as exc:
        return cannot_judge(args, harness, exc)
    if not events:  # nothing the gate decides on: the gate's own words sent back as a prompt
        from handrail.runs.gate import Decision  # lazy: a hook's start-up

        return adapter.answer(args.event, Decision("allow"))  # type: ignore[no-any-return]
    if args.server:  # the input read here too, so that what the server refuses is known first
        from handrail.gate import remote  # lazy: a hook's start-up

        try:
            return remote.ask(args, harness, events[0], data, [])
        except remote.Unreachable as exc:
            return store_failed(args.on_error, harness, args.event, events[0], exc, require=args.require_run)
    try:
        decision = _decide(args, events[0], harness, events[1:])
    except Exception as exc:  # the store cannot be read, or a bug: refused while a run may be active
        return _undecided(args, harness, events[0], exc)
    return adapter.answer(args.event, decision)  # type: ignore[no-any-return]


def _decide(args: Args, event: GateEvent, harness: str, more: list[GateEvent] | None = None) -> Decision:
    from handrail.runs.gate import Options  # lazy: a hook's start-up

    options = Options(
        require_run=args.require_run,
        reminder=not args.no_reminder,
        stop_limit=args.stop_limit,
        driven_from=args.driven_from,
        driven_run=args.driven_run,
    )
    place = locate(args.database)
    store = open_store(args.database, place)
    if store is None:
        from handrail.runs.gate_store import first_refusal  # lazy: a hook's start-up

        return first_refusal(None, [event, *(more or [])], options, _protected(place))
    from handrail.gate import active_marks  # lazy: a hook's start-up
    from handrail.runs import gate_store  # lazy: a hook's start-up

    try:
        folders = _folders(harness, event.cwd)
        protected = _protected(place)
        seen: list[str] = []
        try:
            judged = gate_store.judged(store, event, options, protected, folders, more=more or (), seen=seen)
        except gate_store.Unrecorded as unrecorded:  # the decision stands; its record waits in the spool
            from handrail.gate import outages  # lazy: a hook's start-up

            outages.keep_record(unrecorded.run_id, unrecorded.step_id, unrecorded.data)
            sys.stderr.write(f"handrail gate: {_reason(unrecorded)}; kept to be written later\n")
            active_marks.note(place.home, seen, folders)
            return unrecorded.decision
        active_marks.note(place.home, seen, folders)
        decision = judged.decision
        if harness != "git":  # git's hooks refuse ref updates; what a tool call did is checked around it
            from handrail.gate import effects  # lazy: a hook's start-up

            decision = effects.follow(store, event, judged, options, protected, place.home)
        replay_outages(store, folders, home=place.home)
        return decision
    finally:
        store.close()


def _folders(harness: str, cwd: str) -> list[str]:
    """The folders a hook's run is looked for in: its working folder, then the project
    folder its harness names."""
    folders = [cwd]
    variable = "CLAUDE_PROJECT_DIR" if harness == "claude-code" else None
    if harness not in ("git", "claude-code"):
        variable = _adapter(harness).PROJECT_FOLDER
    project = os.environ.get(variable) if variable else None
    if project:
        folders.append(project)
    return folders


def cannot_judge(args: Args, harness: str, exc: BaseException) -> Answer:
    """The answer of a hook that cannot judge its event: input it cannot read (too
    deep, not JSON, of the wrong shape), or an error anywhere in it. While a run is
    active in the working folder it refuses, as `store_failed` says; otherwise the
    harness's non-blocking error. This never raises: its own failure is exit 2, the
    blocking error of every harness's command hook (spec/gate.md, "When the gate
    cannot judge")."""
    try:
        from handrail.gate import HookInputError  # lazy: a hook's start-up
        from handrail.runs.gate import GateEvent  # lazy: a hook's start-up

        folders = _folders(harness, os.getcwd())
        active: bool | None = None
        if not args.server:
            try:
                active = _run_active(args.database, folders)
            except Exception:  # the store cannot be read either: the marks say
                active = None
        kind = _kind(harness, args.event)
        event = GateEvent(kind, folders[0])
        if isinstance(exc, HookInputError) and not _refuses(
            args.on_error, active, args.require_run, None, event
        ):
            if harness == "git":
                from handrail.gate import git_hooks  # lazy: a hook's start-up

                return git_hooks.warning(f"handrail gate: {exc}", False)
            from handrail.gate import hook_input  # lazy: a hook's start-up

            return hook_input.malformed(str(exc))
        return store_failed(
            args.on_error, harness, args.event, event, exc, active=active, require=args.require_run
        )
    except BaseException as last:  # the last guard: a refusal every harness reads as one
        import traceback  # lazy: only a bug comes here

        trace = "".join(traceback.format_exception_only(type(last), last)).strip()[:300]
        from handrail.gate import Answer  # lazy: a hook's start-up

        return Answer("", f"handrail gate: cannot judge this ({_reason(exc)}; then {trace}); refused\n", 2)


def _undecided(args: Args, harness: str, event: GateEvent, exc: Exception) -> Answer:
    """`event` read but not decided: whether a run is active is asked of the store once
    more (None when it cannot say), and `store_failed` answers."""
    try:
        active: bool | None = _run_active(args.database, _folders(harness, event.cwd))
    except Exception:
        active = None
    return store_failed(
        args.on_error, harness, args.event, event, exc, active=active, require=args.require_run
    )


def _kind(harness: str, event: str) -> Any:
    """The gate's kind of a hook event, as the command names it."""
    if harness == "git":
        return "before-tool"
    if harness == "claude-code":
        from handrail.gate import claude_code  # lazy: a hook's start-up

        return claude_code.EVENTS[event][1]
    return str(_adapter(harness).EVENTS[event][1])


def _run_active(database: str | None, folders: list[str]) -> bool:
    """Whether an open run's workspace holds one of `folders`; raises when the store
    cannot be read."""
    from handrail.runs import gate_store  # lazy: a hook's start-up

    store = open_store(database)
    if store is None:
        return False
    try:
        return bool(gate_store.holding(store, folders))
    finally:
        store.close()


def _refuses(
    on_error: str, active: bool | None, require: str | None, home: str | None, event: GateEvent
) -> bool:
    """Whether a hook that cannot judge refuses (spec/gate.md, "When the gate cannot
    judge"): with `on_error` deny, while a run is active, and, when the store cannot say
    (`active` None), where a run is required or the gate last saw one active."""
    if on_error == "deny" or active:
        return True
    if active is False:
        return False
    from handrail.gate import active_marks  # lazy: a hook's start-up

    home = home if home is not None else locate(None).home
    return bool(require) or active_marks.marked(home, [event.cwd]) is not None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "its input nests too deep to read"
    return " ".join(str(exc).split())[:300] or type(exc).__name__


OUTAGES_SPOOL = "gate-outages.jsonl"  # outages.NAME, named here so the common case loads nothing


def replay_outages(store: Any, folders: list[str], owner: str | None = None, home: str | None = None) -> None:
    """The events answered while the store could not be read, recorded now that it can.
    `home`: handrail's home, whose spool is looked for without loading its module."""
    if home is not None and not os.path.exists(os.path.join(home, OUTAGES_SPOOL)):
        return  # the common case: one stat
    import contextlib  # lazy: a hook's start-up

    from handrail.gate import outages  # lazy: a hook's start-up

    with contextlib.suppress(Exception):  # best effort: the decision already made stands
        outages.replay(store, folders, owner)


class Place(NamedTuple):
    """Where the run store and handrail's files are, as the settings say."""

    url: str  # the database URL given, or "" for the default SQLite file
    sqlite_file: str | None  # the SQLite file, when the store is one
    home: str  # handrail's home folder
    workflows: tuple[str, ...]  # the workflow sources the environment names


def locate(database: str | None) -> Place:
    """As home.py and store/open.py find them, without loading pathlib or urllib: the
    default SQLite file needs neither."""
    from handrail.settings import Settings  # lazy: a hook's start-up

    settings = Settings.from_environment()
    home = (
        os.path.abspath(os.path.expanduser(settings.home))
        if settings.home
        else os.path.join(os.path.expanduser("~"), ".handrail")
    )
    url = database or settings.database_url
    sqlite_file: str | None = os.path.join(home, "handrail.db") if not url else None
    if url.lower().startswith("sqlite:"):
        import contextlib  # lazy: a hook's start-up

        from handrail.store.urls import sqlite_path  # lazy: only a URL given names the file

        with contextlib.suppress(Exception):  # a URL that names no file: open_store says so
            sqlite_file = str(sqlite_path(url))
    return Place(url, sqlite_file, home, tuple(path for _, path in settings.workflow_paths))


def open_store(database: str | None, place: Place | None = None) -> RunStore | None:
    """The run store, or None when its SQLite file does not exist (no run was ever
    started there, and the gate creates no database). The one store: it upgrades an
    older schema and refuses a newer one, naming it. Opened as a reader: a hook appends
    one event at most, and SQLite refuses any damaged page it touches, so the whole
    file is not checked first on every tool call."""
    place = place or locate(database)
    if place.sqlite_file is not None and not os.path.exists(place.sqlite_file):
        return None
    from handrail.store import open as opening  # lazy: a hook's start-up
    from handrail.store.urls import sqlite_url  # lazy: a hook's start-up

    if place.url:
        return opening.open_store(place.url, reading=True)
    from pathlib import Path  # lazy: a hook's start-up

    assert place.sqlite_file is not None
    return opening.open_store(sqlite_url(Path(place.sqlite_file)), reading=True)


def protected_paths(database: str | None, more: tuple[str, ...] = ()) -> Any:
    """What no agent may touch while a run is active: the run store (`database`, else
    the default one), handrail's home, the workflow sources of the environment and `more`."""
    return _protected(locate(database), more)


def _protected(place: Place, more: tuple[str, ...] = ()) -> Any:
    from handrail.runs.gate import Protected  # lazy: a hook's start-up

    paths = [place.home, *place.workflows, *more]
    if place.sqlite_file is not None:
        paths.append(place.sqlite_file)
    found = {os.path.abspath(os.path.expanduser(p)) for p in paths}
    found |= {os.path.realpath(p) for p in found}
    return Protected(tuple(sorted(found)), os.path.expanduser("~"))


def store_failed(
    on_error: str,
    harness: str,
    name: str,
    event: GateEvent,
    exc: BaseException,
    owner: str | None = None,
    active: bool | None = None,
    require: str | None = None,
    home: str | None = None,
) -> Answer:
    """The answer of a hook that cannot judge `event` (the store cannot be read, or an
    error anywhere): refused while a run is or may be active in its folder, and always
    with `on_error` deny. `active`: whether a run is (None: unknown, so the marks of
    where the gate last saw one, and `require`, a run required here, say); `name`: the
    hook event as the command names it; `home`: handrail's home (default: as the
    environment says)."""
    reason = _reason(exc)
    refuse = _refuses(on_error, active, require, home, event)
    from handrail.gate import outages  # lazy: a hook's start-up

    outages.keep(event.cwd, event.kind, "deny" if refuse else "allow", reason, owner=owner)
    why = "--on-error deny" if on_error == "deny" else "a run is or may be active here"
    text = f"handrail gate: cannot judge this ({reason}); " + (
        f"refusing ({why})" if refuse else "allowing: no run is known to be active here"
    )
    if harness == "git":
        from handrail.gate import git_hooks  # lazy: a hook's start-up

        return git_hooks.warning(text, refuse)
    from handrail.gate import Answer, claude_code  # lazy: a hook's start-up
    from handrail.runs.gate import Decision  # lazy: a hook's start-up

    adapter = claude_code if harness == "claude-code" else _adapter(harness)
    if not refuse:
        return adapter.warning(name, text)  # type: ignore[no-any-return]
    verdict: Verdict = "block" if event.kind in ("stop", "config") else "deny"
    refused = adapter.answer(
        name,
        Decision(
            verdict,
            f"handrail: the gate cannot judge this ({reason}) and a run is or may be active here; "
            "it is refused until the gate can judge. Tell the person.",
        ),
    )
    return Answer(refused.stdout, text + "\n", refused.exit_code)
