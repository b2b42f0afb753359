"""Golden run traces (spec/cases/runs/*.json), run through the service's run tools.

Each trace holds an inline workflow and a list of calls (`start`, `continue`,
`resume`, `abandon`, `edit`, which replaces the served workflow, and `migrate`, which
moves the run to the workflow served now, as `handrail runs migrate` does) with the subset
of each result that must match, as in spec/cases/traces (the same matcher). The
runId of the latest `start` fills in every later call unless the call names its
own; `"runId": "$none"` leaves it out (workflow_resume then lists the open runs);
`"$branch:N"` names branch N and `"$child"` the child run, as the latest answer that
listed them (`branches`, `children`) gave them. `workflows` serves more workflows
beside the traced one (the workflows sub-workflow steps start). Claims: `claim` calls
workflow_claim, `as` names the agent session calling, `"runId": "$claim:N"` is the
branch the Nth claim gave, and `wait` lets a lease run out.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from handrail.catalog import Entry, Snapshot, Source
from handrail.checks import check_config
from handrail.compiler import compile_text
from handrail.model.errors import HandrailError
from handrail.model.request import LOCAL, Request
from handrail.model.workflow import Workflow
from handrail.runs.ledger import RunSettings
from handrail.service.core import Service, later_runs
from tests.checks.workspaces import write as write_files
from tests.conftest import SPEC
from tests.engine.test_traces import mismatches

pytestmark = pytest.mark.slow

RUNS = SPEC / "cases" / "runs"
TOOLS = {
    "start": "workflow_start",
    "continue": "workflow_continue",
    "resume": "workflow_resume",
    "abandon": "workflow_abandon",
    "claim": "workflow_claim",
}
NONE = "$none"
REQUIRED = {
    "accept", "reject", "loops", "blocked", "resume", "pinning", "migrate-renamed-step",
    "parallel-branches", "sub-workflow", "claims", "lease-expiry",
}  # fmt: skip
CLAIMED = "$claim:"  # "$claim:N": the runId the Nth `claim` of the trace gave


class _Editable:
    """A catalog stand-in serving one workflow, which an `edit` call replaces."""

    def __init__(self, workflow: Workflow, others: list[Workflow] | None = None) -> None:
        self.others = {w.id: Entry(w, Source("cli", Path("<run trace>"))) for w in others or ()}
        self.serve(workflow)

    def serve(self, workflow: Workflow) -> None:
        entries = {**self.others, workflow.id: Entry(workflow, Source("cli", Path("<run trace>")))}
        self._snapshot = Snapshot(MappingProxyType(entries), (), (), MappingProxyType({}))

    def snapshot(self) -> Snapshot:
        return self._snapshot


def compiled(document: dict[str, Any]) -> Workflow:
    # as the catalog reads a configured source: its command checks may run
    result = compile_text(json.dumps(document), "<run trace>", origin="source")
    assert result.workflow is not None, [d.render() for d in result.errors]
    return result.workflow


def run_trace(trace: dict[str, Any], folder: Path) -> list[str]:
    workflow = compiled(trace["workflow"])
    catalog = _Editable(workflow, [compiled(w) for w in trace.get("workflows", ())])
    server = trace.get("server", {})  # the server's own check configuration (issue 16)
    checks = check_config(
        allow_commands=server.get("allowCommands", False),
        commands=[f"{name}={line}" for name, line in server.get("commands", {}).items()],
    )
    leased = {"lease_seconds": server["leaseSeconds"]} if "leaseSeconds" in server else {}
    runs = later_runs(f"sqlite:///{folder / 'runs.db'}", lambda: RunSettings(**leased))
    service = Service(catalog, runs=runs, checks=checks)  # type: ignore[arg-type]
    problems: list[str] = []
    run_id: str | None = None
    claimed: list[str] = []
    tree: dict[str, str] = {}  # "$branch:N", "$child" -> run id, from the latest answer naming them
    try:
        for index, call in enumerate(trace["calls"]):
            where = f"call {index} ({call['tool']})"
            params = dict(call.get("params", {}))
            if call["tool"] == "edit":
                edited = compiled(params["workflow"])
                catalog.serve(edited)
                outcome: dict[str, Any] = {"version": edited.version}
            elif call["tool"] == "write":  # files into the workspace (the working folder)
                write_files(Path.cwd(), params["files"])
                outcome = {"written": sorted(params["files"])}
            elif call["tool"] == "migrate":
                try:
                    outcome = service.runs.migrate(
                        LOCAL,
                        run_id or "",
                        catalog.snapshot().entries[workflow.id].workflow,
                        params.get("map", {}),
                        person="trace",
                        dry_run=params.get("dryRun", False),
                    )
                except HandrailError as exc:
                    outcome = {"error": {"code": exc.code, "message": exc.message, "data": exc.data}}
            elif call["tool"] == "wait":  # time passing: a lease running out
                time.sleep(params["seconds"])
                outcome = {"waited": params["seconds"]}
            elif call["tool"] in ("approve", "decline"):  # what `handrail runs approve|decline` does
                named = params.get("runId", run_id or "")  # "$branch:N", "$child" too
                try:
                    outcome = service.runs.decide(
                        LOCAL,
                        tree.get(named, named),
                        "approve" if call["tool"] == "approve" else "decline",
                        person=params["person"],
                        comment=params.get("comment"),
                    )
                except HandrailError as exc:
                    outcome = {"error": {"code": exc.code, "message": exc.message, "data": exc.data}}
            else:
                if call["tool"] == "start":
                    params.setdefault("workflowId", workflow.id)
                elif params.get("runId") == NONE:
                    del params["runId"]
                elif str(params.get("runId", "")).startswith(CLAIMED):
                    params["runId"] = claimed[int(params["runId"].removeprefix(CLAIMED))]
                elif params.get("runId") in tree:
                    params["runId"] = tree[params["runId"]]
                elif "runId" not in params:
                    assert run_id is not None, f"{where}: no run started yet"
                    params["runId"] = run_id
                # `as`: the agent session calling (stdio:NAME); without it, the person
                asking = Request(session=f"stdio:{call['as']}") if "as" in call else LOCAL
                try:
                    outcome = service.call(TOOLS[call["tool"]], params, asking)
                except HandrailError as exc:
                    outcome = {"error": {"code": exc.code, "message": exc.message, "data": exc.data}}
                if call["tool"] == "start" and "runId" in outcome:
                    run_id = outcome["runId"]
                if call["tool"] == "claim" and outcome.get("claimed"):
                    claimed.append(outcome["runId"])
                tree.update(
                    {
                        f"$branch:{b['branch']}": b["runId"]
                        for b in outcome.get("branches", ())
                        if isinstance(b, dict) and "runId" in b
                    }
                )
                for child in outcome.get("children", ()):
                    tree["$child"] = child["runId"]
            expect = dict(call.get("expect", {}))
            if "error" in expect and "error" not in outcome:
                problems.append(f"{where}: expected error {expect['error']}, got {outcome}")
                continue
            if "error" in outcome and "error" not in expect:
                problems.append(f"{where}: unexpected error {outcome['error']}")
                continue
            problems.extend(f"{where}{m}" for m in mismatches(expect, outcome))
    finally:
        service.close()
    return problems


def trace_files() -> list[Path]:
    return sorted(RUNS.glob("*.json"))


def test_the_run_traces_cover_accept_reject_loops_blocked_resume_pinning_claims_and_leases() -> None:
    assert {p.stem for p in trace_files()} >= REQUIRED


@pytest.mark.parametrize("path", trace_files(), ids=lambda p: p.stem)
def test_run_trace_is_well_formed(path: Path) -> None:
    trace = json.loads(path.read_text("utf-8"))
    assert (
        {"description", "workflow", "calls"}
        <= set(trace)
        <= {"description", "workflow", "calls", "server", "workflows"}
    )
    assert trace["description"].strip()
    for call in trace["calls"]:
        assert set(call) <= {"tool", "params", "expect", "note", "as"}
        assert call["tool"] in {*TOOLS, "edit", "write", "approve", "decline", "migrate", "wait"}
        assert isinstance(call["expect"], dict) and call["expect"], "every call states what it expects"


@pytest.mark.parametrize("path", trace_files(), ids=lambda p: p.stem)
def test_run_trace_meets_every_expectation(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the default workspace
    assert run_trace(json.loads(path.read_text("utf-8")), tmp_path) == []
