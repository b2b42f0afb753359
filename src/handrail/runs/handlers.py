"""The run tools' handlers, as the service dispatches them: arguments in, results out."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from handrail.model.errors import InvalidParams, SecurityError

if TYPE_CHECKING:
    from handrail.catalog import Snapshot
    from handrail.model.request import Request
    from handrail.model.workflow import Workflow
    from handrail.runs.core import Runs

log = logging.getLogger("handrail.runs")

Handler = Callable[["Request", "Snapshot", dict[str, Any]], Any]
HIDDEN_BY_RUNS_ONLY = ("workflow_get", "workflow_next", "workflow_validate")


def run_handlers(runs: Runs, workflow: Callable[[Snapshot, str], Workflow]) -> dict[str, Handler]:
    """`workflow(snapshot, id)` finds a catalog workflow or raises WorkflowNotFound."""

    def start(request: Request, snapshot: Snapshot, args: dict[str, Any]) -> Any:
        refuse_lone_surrogates(args)
        found = workflow(snapshot, args["workflowId"])
        return runs.start(
            request,
            found,
            args["goal"],
            args.get("workspace"),
            args.get("context"),
            workflow_folders=given_sources(snapshot),
        )

    def continue_(request: Request, snapshot: Snapshot, args: dict[str, Any]) -> Any:
        refuse_lone_surrogates(args)
        request = _with_lease(request, args)
        return runs.continue_(
            request, snapshot, args["runId"], args.get("stepId"), args.get("output"), args.get("context")
        )

    def resume(request: Request, snapshot: Snapshot, args: dict[str, Any]) -> Any:
        request = _with_lease(request, args)
        return runs.resume(request, snapshot, args.get("runId"), args.get("workspace"))

    def abandon(request: Request, snapshot: Snapshot, args: dict[str, Any]) -> Any:
        refuse_lone_surrogates(args)
        return runs.abandon(_with_lease(request, args), args["runId"], args["reason"])

    def claim(request: Request, snapshot: Snapshot, args: dict[str, Any]) -> Any:
        refuse_lone_surrogates(args)
        return runs.claims.claim(request, args.get("runId"), args.get("workflowId"), args.get("workspace"))

    return {
        "workflow_claim": claim,
        "workflow_start": start,
        "workflow_continue": continue_,
        "workflow_resume": resume,
        "workflow_abandon": abandon,
    }


def _with_lease(request: Request, args: dict[str, Any]) -> Request:
    """The request with the lease token the call presents (workflow_claim gave it)."""
    lease = args.get("lease")
    return request if lease is None else request._replace(lease=str(lease))


def given_sources(snapshot: Snapshot) -> list[str]:
    """The workflow sources the server was given (`--workflows`, the environment's), as
    written and as resolved: the gate protects them while the run is active, and a
    hook cannot read the server's options."""
    found: set[str] = set()
    for source in snapshot.per_source:
        if source.name == "cli" or source.name.startswith("env:"):
            found.add(os.path.abspath(source.path))
            found.add(os.path.realpath(source.path))
    return sorted(found)


def refuse_lone_surrogates(args: dict[str, Any]) -> None:
    """An InvalidParams naming the first text in `args` that holds half of a UTF-16 pair
    (JSON lets `\\ud800` through): it is not Unicode text, so no database keeps it as text
    and no terminal or page can show it."""
    pending: list[tuple[str, Any]] = list(args.items())
    while pending:
        where, value = pending.pop()
        texts = [(where, value)] if isinstance(value, str) else []
        if isinstance(value, dict):
            texts = [(f"{where} (a key)", key) for key in value if isinstance(key, str)]
            pending.extend((f"{where}.{key}", item) for key, item in value.items())
        elif isinstance(value, list):
            pending.extend((f"{where}[{i}]", item) for i, item in enumerate(value))
        for at, text in texts:
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                shown = at[:200].encode("utf-8", "backslashreplace").decode("utf-8")
                details = (
                    f"`{shown}` holds a lone surrogate (\\u{ord(text[exc.start]):04x}) at character "
                    f"{exc.start}: a run keeps Unicode text only; send the text as valid UTF-8"
                )
                found: dict[str, Any] = {"details": details, "argument": shown, "position": exc.start}
                raise InvalidParams(data=found) from None


def refuse_in_runs_only(name: str) -> None:
    if name in HIDDEN_BY_RUNS_ONLY:
        raise SecurityError(
            f"{name} is not available: this server runs with --runs-only",
            {
                "tool": name,
                "details": f"{name} is turned off on this server (--runs-only) so that steps are done "
                "in order and checked; use workflow_start, then workflow_continue with each step's "
                "output, and workflow_resume to see where a run stands",
            },
        )


def open_runs_note(runs: Runs, request: Request, *, roots: bool = False) -> str:
    """A paragraph for `initialize`'s instructions naming the workspace's open runs; empty
    when there are none. Never creates the database, and never fails `initialize`.
    `roots`: the client names its workspace through MCP roots, which it is asked for only
    once `initialize` is answered: the note then lists the open runs of every workspace,
    each with its folder, so that the client's are among them."""
    try:
        store_file = getattr(runs, "database_file", None)
        if store_file is not None and not os.path.exists(store_file):
            return ""
        where = None if roots else runs.default_workspace(request)
        listed = runs.open_runs(request, where, limit=10)
    except Exception as exc:  # a broken database must not stop the handshake
        log.warning("could not list open runs for the instructions: %s", exc)
        return ""
    if not listed:
        return ""
    lines = []
    for r in listed:
        step = r["currentStep"]
        at = f"at step `{step['id']}` ({step['title']})" if step else "waiting for context"
        folder = f" in {r['workspace']}" if roots else ""
        lines.append(
            f"- {r['runId']}{folder}: {r['workflowId']}, goal: {r['goal'][:200]}; {at}; "
            f"last update {r['updatedAt']}"
        )
    heading = (
        "Unfinished runs, in every workspace (your client names its workspace through its roots "
        "only after this handshake; workflow_resume with no arguments then lists that workspace's):"
        if roots
        else f"Unfinished runs in this workspace ({listed[0]['workspace']}):"
    )
    return (
        heading
        + "\n"
        + "\n".join(lines)
        + "\n\nTo carry on with one, call workflow_resume with its runId: it returns the current step, "
        "the context and a recap of the work so far. Then send each step's output with workflow_continue."
    )


def run_prompt_text(workflow: Any) -> str:
    """What the model reads when a user picks a workflow's prompt on a --runs-only server."""
    description = f"\n\n{workflow.description}" if workflow.description else ""
    return (
        f'Follow the workflow "{workflow.name}" ({workflow.id}) as a run.{description}\n\n'
        f'1. Call workflow_start with workflowId "{workflow.id}" and a goal: a sentence saying what '
        "this run is for. It returns a runId and the first step.\n"
        "2. Do the step, then call workflow_continue with the runId, the step's id as stepId and "
        "what you produced as output. If it is not accepted, fix what the issues say and send it "
        "again.\n"
        "3. Repeat with each step it returns until the status is completed. If the conversation "
        "ends, workflow_resume picks the run up where it stopped."
    )
