"""Parallel loops (spec/runs.md, "Runs in a tree"): each item a branch of its own that
any client works on by its runId, at most maxParallel open at once, the parent moved on
once (and only once) when its branches are done, results in item order."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from handrail.catalog import load_catalog
from handrail.service.core import Service
from tests.helpers.server import ROOT
from tests.runs.workflows import REVIEW_ID, review_files, write

FILES = ["a.py", "b.py", "c.py"]


def _params(tmp: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "handrail", "start", "--no-bundled", "--workflows", str(tmp / "flows")],
        env={
            "HOME": str(tmp / "home"),
            "HANDRAIL_HOME": str(tmp / "handrail-home"),
            "PYTHONPATH": str(ROOT / "src"),
        },
        cwd=tmp / "workspace",
    )


async def _call(session: ClientSession, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await session.call_tool(name, arguments)
    assert result.structured_content is not None, result
    assert not result.is_error, result.structured_content
    return dict(result.structured_content)


async def _work(session: ClientSession, run_id: str) -> list[dict[str, Any]]:
    """Every step of a branch submitted in turn, as an agent would: the answers."""
    answers = []
    shown = await _call(session, "workflow_resume", {"runId": run_id})
    while shown["status"] == "active" and shown["step"] is not None:
        step = shown["step"]
        output = f"Reviewed: {step['title']}"
        shown = await _call(
            session,
            "workflow_continue",
            {"runId": run_id, "stepId": step["id"], "output": output, "context": {"last": step["title"]}},
        )
        answers.append(shown)
    return answers


async def _parallel_run(tmp: Path) -> dict[str, Any]:
    record: dict[str, Any] = {}
    async with (
        stdio_client(_params(tmp), errlog=(tmp / "server.log").open("w")) as (read, write),
        ClientSession(read, write) as session,
    ):
        with anyio.fail_after(60):
            await session.initialize()
            started = await _call(session, "workflow_start", {"workflowId": REVIEW_ID, "goal": "Review"})
            parent = started["runId"]
            record["waiting"] = await _call(
                session,
                "workflow_continue",
                {"runId": parent, "stepId": "collect", "output": "Three files.", "context": {"files": FILES}},
            )
            record["submitted_to_parent"] = (
                await session.call_tool(
                    "workflow_continue", {"runId": parent, "stepId": "review", "output": "Reviewed a.py"}
                )
            ).structured_content
            second = record["waiting"]["branches"][1]["runId"]
            record["second"] = await _work(session, second)
            record["after_second"] = await _call(session, "workflow_resume", {"runId": parent})
            for branch in record["after_second"]["branches"]:
                if branch["status"] == "active":
                    await _work(session, branch["runId"])
            record["after_two_more"] = await _call(session, "workflow_resume", {"runId": parent})
            for branch in record["after_two_more"].get("branches", []):
                if branch["status"] == "active":
                    await _work(session, branch["runId"])
            record["done"] = await _call(session, "workflow_resume", {"runId": parent})
    return record


def test_a_parallel_loop_runs_each_item_as_a_branch_and_gathers_the_results_in_item_order(
    tmp_path: Path,
) -> None:
    write(tmp_path / "flows", review_files(max_parallel=2))
    (tmp_path / "workspace").mkdir()
    (tmp_path / "home").mkdir()
    record = anyio.run(_parallel_run, tmp_path)

    waiting = record["waiting"]
    assert waiting["accepted"] is True and waiting["status"] == "active" and waiting["step"] is None
    assert waiting["waitingOn"] == {"kind": "branches", "stepId": "each-file", "count": 3}
    assert "workflow_continue and the branch's runId" in waiting["guidance"]["prompt"]
    branches = waiting["branches"]
    # maxParallel 2: the third item waits its turn
    assert [(b["branch"], b["status"]) for b in branches] == [(0, "active"), (1, "active"), (2, "queued")]
    assert [b.get("item") for b in branches[:2]] == ["a.py", "b.py"]
    assert all(b["holder"] is None and b["currentStep"] == "review" for b in branches[:2])
    assert record["submitted_to_parent"]["code"] == -32009  # the body is the branches' work, not the parent's

    second = record["second"]
    assert second[0]["step"]["title"] == "Note b.py" and second[0]["loop"]["file"] == "b.py"
    assert second[-1]["status"] == "completed" and second[-1]["isComplete"] is True

    after = record["after_second"]
    assert [(b["branch"], b["status"]) for b in after["branches"]] == [
        (0, "active"),
        (1, "completed"),
        (2, "active"),  # a slot freed: the third branch opened
    ]
    done = record["done"]
    assert done["status"] == "active" and done["step"]["id"] == "report"
    assert "branches" not in done
    reviews = done["context"]["reviews"]
    assert [(r["index"], r["item"], r["status"]) for r in reviews] == [
        (0, "a.py", "completed"),
        (1, "b.py", "completed"),
        (2, "c.py", "completed"),
    ]
    assert [o["title"] for o in reviews[2]["outputs"]] == ["Review c.py", "Note c.py"]
    assert reviews[0]["context"] == {"last": "Note a.py"}
    assert [r["stepId"] for r in done["recap"]] == ["collect", "each-file"]


def _service(tmp: Path, document: dict[str, Any]) -> Service:
    write(tmp / "flows", document)
    return Service(load_catalog(tmp / "flows", bundled=False))


def _waiting_parent(service: Service, tmp: Path, files: list[str]) -> dict[str, Any]:
    started = service.call(
        "workflow_start", {"workflowId": REVIEW_ID, "goal": "Review", "workspace": str(tmp)}
    )
    return dict(
        service.call(
            "workflow_continue",
            {"runId": started["runId"], "stepId": "collect", "output": "Files.", "context": {"files": files}},
        )
    )


def _finish(service: Service, run_id: str) -> dict[str, Any]:
    shown = dict(service.call("workflow_resume", {"runId": run_id}))
    while shown["status"] == "active" and shown["step"] is not None:
        step = shown["step"]
        shown = service.call(
            "workflow_continue",
            {"runId": run_id, "stepId": step["id"], "output": f"Reviewed {step['title']}"},
        )
    return shown


def _loop_acceptances(service: Service, run_id: str) -> int:
    run = service.runs.store.get(run_id)
    assert run is not None
    return sum(1 for e in service.runs.events(run) if e.type == "accepted" and e.step_id == "each-file")


def _last_step_at_once(service: Service, run_id: str, barrier: Any, answers: list[Any]) -> None:
    barrier.wait()
    answers.append(service.call("workflow_continue", {"runId": run_id, "stepId": "note", "output": "Noted"}))


def test_two_branches_completing_at_once_advance_the_parent_exactly_once(tmp_path: Path) -> None:
    import threading

    service = _service(tmp_path, review_files(max_parallel=8))
    try:
        for attempt in range(5):
            waiting = _waiting_parent(service, tmp_path, ["x.py", "y.py"])
            parent = waiting["runId"]
            ids = [b["runId"] for b in waiting["branches"]]
            for run_id in ids:  # each branch up to its last step
                service.call("workflow_continue", {"runId": run_id, "stepId": "review", "output": "Reviewed"})
            barrier = threading.Barrier(2)
            answers: list[Any] = []
            threads = [
                threading.Thread(target=_last_step_at_once, args=(service, run_id, barrier, answers))
                for run_id in ids
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert [a["status"] for a in answers] == ["completed", "completed"], attempt
            assert _loop_acceptances(service, parent) == 1, attempt
            resumed = service.call("workflow_resume", {"runId": parent})
            assert resumed["step"]["id"] == "report" and resumed["progress"] == {"completed": 2}
    finally:
        service.close()


def test_with_at_least_the_parent_goes_on_once_enough_branches_completed_and_the_rest_are_cancelled(
    tmp_path: Path,
) -> None:
    service = _service(tmp_path, review_files(max_parallel=3, at_least=2))
    try:
        waiting = _waiting_parent(service, tmp_path, FILES)
        ids = [b["runId"] for b in waiting["branches"]]
        _finish(service, ids[2])
        _finish(service, ids[0])
        resumed = service.call("workflow_resume", {"runId": waiting["runId"]})
        assert resumed["step"]["id"] == "report"
        reviews = resumed["context"]["reviews"]
        assert [(r["item"], r["status"]) for r in reviews] == [
            ("a.py", "completed"),
            ("b.py", "cancelled"),
            ("c.py", "completed"),
        ]
        cancelled = service.call("workflow_resume", {"runId": ids[1]})
        assert cancelled["status"] == "abandoned"
        events = service.runs.events(service.runs.store.get(ids[1]))  # type: ignore[arg-type]
        assert "had the branches it needed" in events[-1].data["reason"]
    finally:
        service.close()


def test_abandoning_the_parent_cancels_its_open_branches_and_too_few_left_fails_the_loop(
    tmp_path: Path,
) -> None:
    service = _service(tmp_path, review_files(max_parallel=1))
    try:
        waiting = _waiting_parent(service, tmp_path, FILES)
        first = waiting["branches"][0]["runId"]
        assert [b["status"] for b in waiting["branches"]] == ["active", "queued", "queued"]
        service.call("workflow_abandon", {"runId": waiting["runId"], "reason": "Not needed after all"})
        branch = service.call("workflow_resume", {"runId": first})
        assert branch["status"] == "abandoned"

        other = _waiting_parent(service, tmp_path, ["p.py", "q.py"])
        service.call(
            "workflow_abandon", {"runId": other["branches"][0]["runId"], "reason": "Cannot review it"}
        )
        failed = service.call("workflow_resume", {"runId": other["runId"]})
        assert failed["status"] == "active" and failed["step"] is None
        assert failed["waitingOn"]["failed"].startswith("1 of loop `each-file`'s 2 branches were abandoned")
        assert "failed" in failed["guidance"]["prompt"] and "workflow_abandon" in failed["guidance"]["prompt"]
        assert [b["status"] for b in failed["branches"]] == ["abandoned", "queued"]
    finally:
        service.close()


def test_a_parent_read_after_a_crash_between_a_branch_completing_and_the_parent_moving_on_moves_it_on(
    tmp_path: Path,
) -> None:
    from handrail.runs.tree import Tree

    service = _service(tmp_path, review_files(max_parallel=8))
    try:
        waiting = _waiting_parent(service, tmp_path, ["only.py"])
        branch = waiting["branches"][0]["runId"]
        # the branch completes but the process dies before the tree hears of it
        answered = Tree.answered
        Tree.answered = lambda self, result: result  # type: ignore[method-assign,assignment,return-value]
        try:
            assert _finish(service, branch)["status"] == "completed"
        finally:
            Tree.answered = answered  # type: ignore[method-assign]
        stored = service.runs.store.get(waiting["runId"])
        assert stored is not None and "waitingOn" in stored.position  # the parent did not move yet
        resumed = service.call("workflow_resume", {"runId": waiting["runId"]})
        assert resumed["step"]["id"] == "report"
        assert [r["item"] for r in resumed["context"]["reviews"]] == ["only.py"]
    finally:
        service.close()


@pytest.mark.slow
def test_on_two_postgresql_replicas_two_branches_completing_at_once_advance_the_parent_once(
    tmp_path: Path, postgres_url: str
) -> None:
    import threading
    from contextlib import ExitStack

    import httpx

    from handrail.store import open_store
    from tests.helpers.http import HttpServer

    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    write(tmp_path / "flows", review_files(max_parallel=8))
    common = ("--no-bundled", "--workflows", str(tmp_path / "flows"), "--database", postgres_url)

    def call(server: HttpServer, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        with httpx.Client(timeout=60) as client:
            answer = client.post(server.url, json=body, headers=headers).json()
        assert "result" in answer, answer
        return dict(answer["result"])

    with ExitStack() as stack:
        one, two = (stack.enter_context(HttpServer(*common)) for _ in range(2))
        parents = []
        for round_ in range(4):
            started = call(one, "workflow_start", {"workflowId": REVIEW_ID, "goal": f"Review {round_}"})
            parent = started["runId"]
            waiting = call(
                two,
                "workflow_continue",
                {
                    "runId": parent,
                    "stepId": "collect",
                    "output": "Two.",
                    "context": {"files": FILES[:2]},
                },
            )
            ids = [b["runId"] for b in waiting["branches"]]
            for run_id, server in zip(ids, (one, two), strict=True):
                call(server, "workflow_continue", {"runId": run_id, "stepId": "review", "output": "Reviewed"})
            barrier = threading.Barrier(2)
            answers: list[dict[str, Any]] = []

            def note(
                server: HttpServer,
                run_id: str,
                barrier: threading.Barrier = barrier,
                answers: list[dict[str, Any]] = answers,
            ) -> None:
                barrier.wait()
                params = {"runId": run_id, "stepId": "note", "output": "Noted"}
                answers.append(call(server, "workflow_continue", params))

            threads = [
                threading.Thread(target=note, args=(server, run_id))
                for run_id, server in zip(ids, (one, two), strict=True)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert sorted(a["status"] for a in answers) == ["completed", "completed"]
            parents.append(parent)
        store = open_store(postgres_url)
        try:
            for parent in parents:
                run = store.get(parent)
                assert run is not None and run.current_step == {"id": "report", "title": "Report"}
                loop_events = [e for e in store.events(parent) if e.step_id == "each-file"]
                assert [e.type for e in loop_events] == ["accepted"]
                assert [r["item"] for r in run.context["reviews"]] == FILES[:2]
        finally:
            store.close()


async def _sub_workflow_run(tmp: Path) -> dict[str, Any]:
    record: dict[str, Any] = {}
    async with (
        stdio_client(_params(tmp), errlog=(tmp / "server.log").open("w")) as (read, write),
        ClientSession(read, write) as session,
    ):
        with anyio.fail_after(60):
            await session.initialize()
            arguments = {"workflowId": "review-each", "goal": "Review", "context": {"files": ["x.py"]}}
            record["started"] = started = await _call(session, "workflow_start", arguments)
            child = started["children"][0]["runId"]
            record["child"] = await _call(session, "workflow_resume", {"runId": child})
            for step, output in (("read", "Read x.py"), ("judge", "Looks right")):
                params = {"runId": child, "stepId": step, "output": output, "context": {"verdict": "ok"}}
                record[step] = await _call(session, "workflow_continue", params)
            record["parent"] = await _call(session, "workflow_resume", {"runId": started["runId"]})
    return record


def test_a_sub_workflow_step_runs_its_workflow_as_a_child_and_takes_its_result_under_as(
    tmp_path: Path,
) -> None:
    from tests.runs.workflows import code_review, review_each

    write(tmp_path / "flows", review_each())
    write(tmp_path / "flows", code_review())
    (tmp_path / "workspace").mkdir()
    (tmp_path / "home").mkdir()
    record = anyio.run(_sub_workflow_run, tmp_path)
    started = record["started"]
    assert started["step"] is None and started["waitingOn"]["kind"] == "child"
    assert "waits for its child run of workflow `code-review`" in started["guidance"]["prompt"]
    child = record["child"]
    assert child["workflowId"] == "code-review" and child["step"]["title"] == "Read x.py"
    assert child["context"] == {"target": "x.py"}
    assert record["judge"]["status"] == "completed"
    parent = record["parent"]
    assert parent["step"]["id"] == "report" and parent["progress"] == {"completed": 1}
    review = parent["context"]["review"]
    assert review["runId"] == child["runId"] and review["status"] == "completed"
    assert review["context"] == {"target": "x.py", "verdict": "ok"}
    assert [o["summary"] for o in review["outputs"]] == ["Read x.py", "Looks right"]


def test_a_person_declining_a_child_runs_step_fails_the_parents_step_with_their_words(tmp_path: Path) -> None:
    from handrail.model.request import LOCAL
    from tests.runs.workflows import code_review, review_each

    write(tmp_path / "flows", code_review(confirm=True))
    service = _service(tmp_path, review_each())
    try:
        arguments = {"workflowId": "review-each", "goal": "G", "workspace": str(tmp_path)}
        started = service.call("workflow_start", {**arguments, "context": {"files": ["x.py"]}})
        child = started["children"][0]["runId"]
        service.call("workflow_continue", {"runId": child, "stepId": "read", "output": "Read it"})
        waiting = service.call("workflow_continue", {"runId": child, "stepId": "judge", "output": "Fine"})
        assert waiting["status"] == "awaiting_approval"
        service.runs.decide(LOCAL, child, "decline", person="maria", comment="Not thorough enough")
        parent = service.call("workflow_resume", {"runId": started["runId"]})
        assert parent["waitingOn"]["failed"] == (
            f"its child run {child} of workflow `code-review` was declined: "
            "maria declined this step: Not thorough enough"
        )
        assert service.call("workflow_resume", {"runId": child})["status"] == "abandoned"
        events = service.runs.events(service.runs.store.get(started["runId"]))  # type: ignore[arg-type]
        assert events[-1].type == "rejected" and "Not thorough enough" in events[-1].data["issues"][0]
    finally:
        service.close()


def test_a_person_declining_a_branchs_step_ends_the_branch_and_too_many_declined_fail_the_loop(
    tmp_path: Path,
) -> None:
    from handrail.model.request import LOCAL

    service = _service(tmp_path, review_files(max_parallel=3, at_least=2, confirm=True))
    try:
        waiting = _waiting_parent(service, tmp_path, FILES)
        ids = [b["runId"] for b in waiting["branches"]]
        for run_id in ids[:2]:
            asked = service.call(
                "workflow_continue", {"runId": run_id, "stepId": "review", "output": "Reviewed"}
            )
            assert asked["status"] == "awaiting_approval"
        declined = service.runs.decide(LOCAL, ids[0], "decline", person="maria", comment="Missed the tests")
        assert declined["status"] == "abandoned"
        events = service.runs.events(service.runs.store.get(ids[0]))  # type: ignore[arg-type]
        assert events[-1].type == "abandoned"
        assert events[-1].data["reason"] == "declined: maria declined this step: Missed the tests"
        parent = service.call("workflow_resume", {"runId": waiting["runId"]})
        assert "failed" not in parent["waitingOn"]  # two of three can still complete
        assert [b["status"] for b in parent["branches"]] == ["abandoned", "awaiting_approval", "active"]
        service.runs.decide(LOCAL, ids[1], "decline", person="maria", comment="Same again")
        failed = service.call("workflow_resume", {"runId": waiting["runId"]})
        assert failed["waitingOn"]["failed"].startswith("2 of loop `each-file`'s 3 branches were abandoned")
        assert [b["status"] for b in failed["branches"]] == ["abandoned", "abandoned", "abandoned"]
        cancelled = service.runs.events(service.runs.store.get(ids[2]))  # type: ignore[arg-type]
        assert cancelled[-1].data["reason"].startswith("cancelled: 2 of loop")
    finally:
        service.close()


def test_sub_workflows_nest_at_most_eight_runs_deep_and_an_unknown_workflow_fails_the_step(
    tmp_path: Path,
) -> None:
    from tests.runs.workflows import review_each

    for level in range(1, 10):  # level-N starts level-N+1: nine workflows, none twice
        nested = review_each(target=f"level-{level + 1}") | {"id": f"level-{level}"}
        nested["steps"][0]["body"][0]["context"] = {"files": ["again"]}  # each child loops once more
        write(tmp_path / "flows", nested)
    write(tmp_path / "flows", review_each(target="no-such-flow") | {"id": "broken-each"})
    top_flow = review_each(target="level-1")
    top_flow["steps"][0]["body"][0]["context"] = {"files": ["again"]}
    service = _service(tmp_path, top_flow)
    try:
        arguments = {"goal": "G", "workspace": str(tmp_path), "context": {"files": ["x.py"]}}
        top = service.call("workflow_start", {"workflowId": "review-each", **arguments})
        chain = [top["runId"]]
        while True:
            shown = service.call("workflow_resume", {"runId": chain[-1]})
            if not shown.get("children"):
                break
            chain.append(shown["children"][0]["runId"])
        assert len(chain) == 9  # the top run and eight below it
        assert shown["waitingOn"]["failed"].startswith("runs are nested 8 deep, the most there may be")
        broken = service.call("workflow_start", {"workflowId": "broken-each", **arguments})
        assert broken["waitingOn"]["failed"] == "workflow `no-such-flow` is not in the server's catalog"
        assert broken["children"] == []
    finally:
        service.close()


def test_context_sent_to_a_waiting_parent_is_kept_but_does_not_move_it_past_its_branches(
    tmp_path: Path,
) -> None:
    service = _service(tmp_path, review_files(max_parallel=1))
    try:
        waiting = _waiting_parent(service, tmp_path, ["a.py", "b.py"])
        changed = service.call("workflow_continue", {"runId": waiting["runId"], "context": {"files": []}})
        assert changed["accepted"] is False and changed["step"] is None
        assert changed["waitingOn"] == {"kind": "branches", "stepId": "each-file", "count": 2}
        assert [b["status"] for b in changed["branches"]] == ["active", "queued"]
        resumed = service.call("workflow_resume", {"runId": waiting["runId"]})
        assert resumed["context"]["files"] == [] and resumed["step"] is None
    finally:
        service.close()
