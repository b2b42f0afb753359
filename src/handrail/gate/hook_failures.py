"""What a hook answers when it cannot judge its event (spec/gate.md, "When the gate
cannot judge"): input it cannot read, a store it cannot open, a bug anywhere. While a
run is or may be active in the working folder it refuses, in the harness's blocking
form; otherwise the harness's non-blocking warning. Loaded only when a hook fails.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from handrail.gate.hook_options import adapter_of, folders_of, kind_of
from handrail.gate.hook_store import locate, open_store

if TYPE_CHECKING:
    from handrail.gate import Answer, Args
    from handrail.runs.gate import GateEvent, Verdict


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

        folders = folders_of(harness, os.getcwd())
        active: bool | None = None
        if not args.server:
            try:
                active = _run_active(args.database, folders)
            except Exception:  # the store cannot be read either: the marks say
                active = None
        event = GateEvent(kind_of(harness, args.event), folders[0])
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

        return Answer("", f"handrail gate: cannot judge this ({reason(exc)}; then {trace}); refused\n", 2)


def undecided(args: Args, harness: str, event: GateEvent, exc: Exception) -> Answer:
    """`event` read but not decided: whether a run is active is asked of the store once
    more (None when it cannot say), and `store_failed` answers."""
    try:
        active: bool | None = _run_active(args.database, folders_of(harness, event.cwd))
    except Exception:
        active = None
    return store_failed(
        args.on_error, harness, args.event, event, exc, active=active, require=args.require_run
    )


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


def reason(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "its input nests too deep to read"
    return " ".join(str(exc).split())[:300] or type(exc).__name__


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
    said = reason(exc)
    refuse = _refuses(on_error, active, require, home, event)
    from handrail.gate import outages  # lazy: a hook's start-up

    outages.keep(event.cwd, event.kind, "deny" if refuse else "allow", said, owner=owner)
    why = "--on-error deny" if on_error == "deny" else "a run is or may be active here"
    text = f"handrail gate: cannot judge this ({said}); " + (
        f"refusing ({why})" if refuse else "allowing: no run is known to be active here"
    )
    if harness == "git":
        from handrail.gate import git_hooks  # lazy: a hook's start-up

        return git_hooks.warning(text, refuse)
    from handrail.gate import Answer, claude_code  # lazy: a hook's start-up
    from handrail.runs.gate import Decision  # lazy: a hook's start-up

    adapter = claude_code if harness == "claude-code" else adapter_of(harness)
    if not refuse:
        return adapter.warning(name, text)  # type: ignore[no-any-return]
    verdict: Verdict = "block" if event.kind in ("stop", "config") else "deny"
    refused = adapter.answer(
        name,
        Decision(
            verdict,
            f"handrail: the gate cannot judge this ({said}) and a run is or may be active here; "
            "it is refused until the gate can judge. Tell the person.",
        ),
    )
    return Answer(refused.stdout, text + "\n", refused.exit_code)
