"""`handrail runs migrate` and `handrail check --against-runs`, through `handrail.cli.main`,
over runs a real `handrail start` process made and goes on with over MCP (spec/runs.md,
"Migration"). The workflows are those of the golden traces."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from handrail.cli import main
from handrail.model.request import Request
from handrail.runs.migration import MigrationRefused
from handrail.service.core import default_runs
from tests.conftest import SPEC
from tests.helpers.server import Server

CASES = SPEC / "cases" / "runs"


def versions(case: str) -> list[dict[str, Any]]:
    """The trace's workflow and each version its `edit` calls serve, in order."""
    trace = json.loads((CASES / f"{case}.json").read_text("utf-8"))
    return [trace["workflow"], *(c["params"]["workflow"] for c in trace["calls"] if c["tool"] == "edit")]


def deploy(flows: Path, document: dict[str, Any]) -> Path:
    flows.mkdir(parents=True, exist_ok=True)
    path = flows / f"{document['id']}.json"
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return path


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


class Agent:
    """A real `handrail start` on the flows folder and the database, as an agent's client."""

    def __init__(self, flows: Path, database: str) -> None:
        self.server = Server("--no-bundled", "--workflows", str(flows), "--database", database)
        self.server.initialize()

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = self.server.call(tool, arguments)
        assert not result.get("isError"), result
        shown: dict[str, Any] = result["structuredContent"]
        return shown


@pytest.fixture
def agent_factory() -> Iterator[Any]:
    made: list[Agent] = []

    def make(flows: Path, database: str) -> Agent:
        made.append(Agent(flows, database))
        return made[-1]

    yield make
    for agent in made:
        agent.server.close()


def started_at_do_it(agent: Agent, workflow_id: str, workspace: Path) -> str:
    run = agent.call(
        "workflow_start", {"workflowId": workflow_id, "goal": "Move me", "workspace": str(workspace)}
    )
    moved = agent.call(
        "workflow_continue", {"runId": run["runId"], "stepId": "plan", "output": "Plan: do it."}
    )
    assert moved["step"]["id"] == "do-it", moved
    run_id: str = run["runId"]
    return run_id


def test_a_run_moved_across_a_renamed_step_with_map_goes_on_to_completion_over_mcp(
    tmp_path: Path, database: str, agent_factory: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    v1, v2 = versions("migrate-renamed-step")[:2]
    flows = tmp_path / "flows"
    file = deploy(flows, v1)
    agent = agent_factory(flows, database)
    run_id = started_at_do_it(agent, v1["id"], tmp_path)
    deploy(flows, v2)  # the newer version, deployed while the run is under way
    sources = ("--workflows", str(flows), "--no-bundled", "--database", database)

    code, _, err = run_cli(capsys, "runs", "migrate", run_id, "--to", "2.0.0", *sources)
    assert code == 1
    assert f"run {run_id} cannot migrate: its current step `do-it` is not in version 2.0.0" in err
    assert "--map do-it=NEW" in err

    code, out, _ = run_cli(
        capsys, "check", str(file), "--against-runs", "--map", "do-it=implement", *sources[3:]
    )
    assert code == 0, out
    assert "1 open run on other versions, 0 would be stranded" in out

    code, out, _ = run_cli(
        capsys, "runs", "migrate", run_id, "--to", "2.0.0", "--map", "do-it=implement", "--dry-run", *sources
    )
    assert (code, out.strip()) == (
        0,
        f"run {run_id}: would move from 1.0.0 to 2.0.0, at step `implement` (dry run: nothing written)",
    )
    code, out, _ = run_cli(capsys, "runs", "show", run_id, "--format", "json", "--database", database)
    assert json.loads(out)["run"]["workflowVersion"] == "1.0.0"

    code, out, _ = run_cli(
        capsys, "runs", "migrate", run_id, "--to", "2.0.0", "--map", "do-it=implement", *sources
    )
    assert (code, out.strip()) == (0, f"run {run_id}: moved from 1.0.0 to 2.0.0, at step `implement`")

    # the same server process goes on with the run, on the newer version's steps and rules
    stale = agent.server.call("workflow_continue", {"runId": run_id, "stepId": "do-it", "output": "Done."})
    assert stale["isError"] and "implement" in json.dumps(stale)
    done = agent.call("workflow_continue", {"runId": run_id, "stepId": "implement", "output": "Implemented."})
    assert done["accepted"] and done["step"]["id"] == "report"
    short = agent.call("workflow_continue", {"runId": run_id, "stepId": "report", "output": "All done."})
    assert short["accepted"] is False  # version 2.0.0's rule
    last = agent.call(
        "workflow_continue", {"runId": run_id, "stepId": "report", "output": "All done, tested."}
    )
    assert last["status"] == "completed"

    code, out, _ = run_cli(capsys, "runs", "show", run_id, "--database", database)
    assert "workflow   run-migrate 2.0.0" in out
    assert "moved from version 1.0.0 to 2.0.0, at step implement; renamed do-it → implement; by " in out
    code, out, _ = run_cli(capsys, "runs", "verify", run_id, "--database", database)
    assert code == 0, out  # the migrated event is a link of the run's hash chain
    record = tmp_path / "record.json"
    code, _, err = run_cli(capsys, "runs", "export", run_id, "-o", str(record), "--database", database)
    assert code == 0, err
    code, out, err = run_cli(capsys, "runs", "verify", "--file", str(record))
    assert code == 0, out + err  # the record holds the source the run follows since it moved


def test_a_run_whose_current_step_was_removed_is_refused_and_check_against_runs_names_it(
    tmp_path: Path, agent_factory: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    v1, v2 = versions("migrate-step-removed")[:2]
    database = f"sqlite:///{tmp_path / 'runs.db'}"
    flows, changed = tmp_path / "flows", tmp_path / "changed"
    deploy(flows, v1)
    agent = agent_factory(flows, database)
    run_id = started_at_do_it(agent, v1["id"], tmp_path)
    file = deploy(changed, v2)  # the change, not yet deployed

    code, out, _ = run_cli(capsys, "check", str(file), "--against-runs", "--database", database)
    assert code == 1
    assert (
        f"{file}: run {run_id} (local, version 1.0.0 at step `do-it`) would be stranded by version 2.0.0: "
        "its current step `do-it` is not in version 2.0.0"
    ) in out
    assert "1 open run on other versions, 1 would be stranded" in out

    deploy(flows, v2)
    code, out, err = run_cli(
        capsys,
        "runs",
        "migrate",
        "--workflow",
        v1["id"],
        "--to",
        "2.0.0",
        "--workflows",
        str(flows),
        "--no-bundled",
        "--database",
        database,
    )
    assert code == 1 and out == ""
    refusal = f"run {run_id} cannot migrate: its current step `do-it` is not in version 2.0.0"
    assert f"handrail runs migrate: {refusal}" in err
    code, out, _ = run_cli(capsys, "runs", "show", run_id, "--format", "json", "--database", database)
    shown = json.loads(out)
    assert shown["run"]["workflowVersion"] == "1.0.0"
    assert "migrated" not in [e["type"] for e in shown["events"]]
    # it finishes on its own version
    done = agent.call("workflow_continue", {"runId": run_id, "stepId": "do-it", "output": "Done."})
    assert done["step"]["id"] == "report"


def test_migrate_refuses_a_version_the_sources_do_not_serve_and_a_map_naming_no_step(
    tmp_path: Path, agent_factory: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    v1, v2 = versions("migrate-renamed-step")[:2]
    database = f"sqlite:///{tmp_path / 'runs.db'}"
    flows = tmp_path / "flows"
    deploy(flows, v1)
    run_id = started_at_do_it(agent_factory(flows, database), v1["id"], tmp_path)
    deploy(flows, v2)
    sources = ("--workflows", str(flows), "--no-bundled", "--database", database)
    code, _, err = run_cli(capsys, "runs", "migrate", run_id, "--to", "3.0.0", *sources)
    assert code == 1 and "the sources serve version 2.0.0 of `run-migrate`" in err and "not --to 3.0.0" in err
    code, _, err = run_cli(
        capsys, "runs", "migrate", run_id, "--to", "2.0.0", "--map", "doit=implement", *sources
    )
    assert code == 1 and "--map doit=implement: `doit` is no step of run-migrate version 1.0.0" in err
    code, _, err = run_cli(capsys, "runs", "migrate", run_id, "--to", "2.0.0", "--map", "do-it", *sources)
    assert code == 1 and "give it as OLD-STEP=NEW-STEP" in err
    code, _, err = run_cli(capsys, "runs", "migrate", "--to", "2.0.0", *sources)
    assert code == 2 and "give one RUN or --workflow ID" in err


def test_one_person_cannot_migrate_another_persons_run(
    tmp_path: Path, agent_factory: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    v1, v2 = versions("migrate-renamed-step")[:2]
    database = f"sqlite:///{tmp_path / 'runs.db'}"
    flows = tmp_path / "flows"
    deploy(flows, v1)
    run_id = started_at_do_it(agent_factory(flows, database), v1["id"], tmp_path)  # the owner is `local`
    deploy(flows, v2)
    mapped = (
        "--to",
        "2.0.0",
        "--map",
        "do-it=implement",
        "--workflows",
        str(flows),
        "--no-bundled",
        "--database",
        database,
    )
    code, _, err = run_cli(capsys, "runs", "migrate", run_id, "--owner", "mallory", *mapped)
    assert code == 1 and "Run not found" in err
    code, out, _ = run_cli(capsys, "runs", "migrate", "--workflow", v1["id"], "--owner", "mallory", *mapped)
    assert (code, out.strip()) == (0, "no open runs of workflow `run-migrate`")

    runs = default_runs(database)
    try:
        new = runs.ledger.pins.workflow(runs.store.get(run_id).source_hash, None, runs.store)  # type: ignore[union-attr]
        with pytest.raises(Exception, match="Run not found"):
            runs.migrate(Request(owner="mallory"), run_id, new, {}, person="mallory")
        with pytest.raises(MigrationRefused, match="an agent's token may not migrate runs"):
            runs.migrate(Request(owner="local", scope="agent"), run_id, new, {}, person="agent")
    finally:
        runs.close()
    code, out, _ = run_cli(capsys, "runs", "show", run_id, "--format", "json", "--database", database)
    assert json.loads(out)["run"]["workflowVersion"] == "1.0.0"


def test_check_against_runs_says_when_the_run_store_is_missing_or_unreadable_and_keeps_json_output_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = deploy(tmp_path / "flows", versions("migrate-renamed-step")[1])
    missing = tmp_path / "none" / "runs.db"
    code, out, _ = run_cli(capsys, "check", str(file), "--against-runs", "--database", f"sqlite:///{missing}")
    assert code == 0 and f"no run database at {missing}: no run to strand" in out
    assert not missing.parent.exists()  # nothing created
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is no SQLite database, whatever its name says" * 100)
    code, out, err = run_cli(
        capsys, "check", str(file), "--against-runs", "--database", f"sqlite:///{garbage}"
    )
    assert code == 1 and "handrail check: --against-runs: " in err and "Traceback" not in err
    code, out, err = run_cli(
        capsys, "check", str(file), "--format", "json", "--against-runs", "--database", f"sqlite:///{missing}"
    )
    assert code == 0 and json.loads(out) == [] and "no run to strand" in err
