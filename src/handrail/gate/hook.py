"""The hook side of `handrail gate`: one event read, decided and answered. Loaded by
cli/gate.py, and directly by handrail.entry when the command is a hook event (its
options are gate/hook_options.py), so that a hook (run on every tool call) loads
neither the command table nor any layer it does not use: the store, the policy and the
harness adapter load when used, and what answers a hook that cannot judge
(gate/hook_failures.py) only when one cannot.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from handrail.gate.hook_options import GIT_HOOKS, adapter_of, folders_of
from handrail.gate.hook_store import locate, open_store, protected_at

if TYPE_CHECKING:
    from typing import Any

    from handrail.gate import Answer, Args  # lazy: a hook's start-up
    from handrail.runs.gate import Decision, GateEvent  # lazy: a hook's start-up


def run_hook(args: Args) -> int:
    harness = args.harness or ("git" if args.event in GIT_HOOKS else "claude-code")
    if (harness == "git") != (args.event in GIT_HOOKS) or (
        harness not in ("git", "claude-code") and args.event not in adapter_of(harness).EVENTS
    ):
        print(f"handrail gate: {args.event} is not a {harness} hook event", file=sys.stderr)
        return 2
    try:
        answer = _hook(args, harness)
    except (Exception, KeyboardInterrupt) as exc:  # cannot judge: refused while a run may be active
        from handrail.gate import hook_failures  # lazy: only a hook that cannot judge loads it

        answer = hook_failures.cannot_judge(args, harness, exc)
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
        from handrail.gate import hook_failures  # lazy: only a hook that cannot judge loads it

        return hook_failures.cannot_judge(args, harness, exc)
    if args.server:
        from handrail.gate import remote  # lazy: a hook's start-up

        try:
            return remote.ask(args, harness, event, data, warnings)
        except remote.Unreachable as exc:
            from handrail.gate import hook_failures  # lazy: only a hook that cannot judge loads it

            return hook_failures.store_failed(
                args.on_error, harness, args.event, event, exc, require=args.require_run
            )
    try:
        decision = _decide(args, event, harness)
    except Exception as exc:  # the store cannot be read, or a bug: refused while a run may be active
        from handrail.gate import hook_failures  # lazy: only a hook that cannot judge loads it

        return hook_failures.undecided(args, harness, event, exc)
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


def _json_hook(args: Args, harness: str, data: bytes) -> Answer:
    """Cursor, Gemini CLI, Codex: one tool call may be several actions (a patch that
    edits several files), the first that is not allowed deciding, or none."""
    from handrail.gate import HookInputError  # lazy: a hook's start-up

    adapter = adapter_of(harness)
    try:
        events = adapter.read_events(data, args.event)
    except HookInputError as exc:
        from handrail.gate import hook_failures  # lazy: only a hook that cannot judge loads it

        return hook_failures.cannot_judge(args, harness, exc)
    if not events:  # nothing the gate decides on: the gate's own words sent back as a prompt
        from handrail.runs.gate import Decision  # lazy: a hook's start-up

        return adapter.answer(args.event, Decision("allow"))  # type: ignore[no-any-return]
    if args.server:  # the input read here too, so that what the server refuses is known first
        from handrail.gate import remote  # lazy: a hook's start-up

        try:
            return remote.ask(args, harness, events[0], data, [])
        except remote.Unreachable as exc:
            from handrail.gate import hook_failures  # lazy: only a hook that cannot judge loads it

            return hook_failures.store_failed(
                args.on_error, harness, args.event, events[0], exc, require=args.require_run
            )
    try:
        decision = _decide(args, events[0], harness, events[1:])
    except Exception as exc:  # the store cannot be read, or a bug: refused while a run may be active
        from handrail.gate import hook_failures  # lazy: only a hook that cannot judge loads it

        return hook_failures.undecided(args, harness, events[0], exc)
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

        return first_refusal(None, [event, *(more or [])], options, protected_at(place))
    from handrail.gate import active_marks  # lazy: a hook's start-up
    from handrail.runs import gate_store  # lazy: a hook's start-up

    try:
        folders = folders_of(harness, event.cwd)
        protected = protected_at(place)
        seen: list[str] = []
        try:
            judged = gate_store.judged(store, event, options, protected, folders, more=more or (), seen=seen)
        except gate_store.Unrecorded as unrecorded:  # the decision stands; its record waits in the spool
            from handrail.gate import outages  # lazy: a hook's start-up

            outages.keep_record(unrecorded.run_id, unrecorded.step_id, unrecorded.data)
            from handrail.gate.hook_failures import reason  # lazy: only a hook that cannot write loads it

            sys.stderr.write(f"handrail gate: {reason(unrecorded)}; kept to be written later\n")
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
