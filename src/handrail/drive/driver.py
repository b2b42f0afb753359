"""The loop of `handrail drive`: one agent process per attempt at a step, the run read
after each, until the run completes, a person is waited for, or it stops.

The run is the state. The driver keeps nothing it could not read again from the
store, so `--resume RUN` after any end (a `kill -9` among them) goes on from the last
accepted step: a step is accepted only by the agent's own `workflow_continue`, which
the run's position admits once."""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from handrail.checks import processes
from handrail.drive import parallel
from handrail.drive.agents import AGENTS, Attempt
from handrail.drive.usage import Price, Usage
from handrail.model.errors import HandrailError
from handrail.model.request import Request
from handrail.model.runs import EventType, NewEvent, RunRecord, RunStatus, RunUpdate
from handrail.runs import machine
from handrail.store.base import Conflict

EXIT_COMPLETED, EXIT_NOT_COMPLETED, EXIT_USAGE, EXIT_WAITING = 0, 1, 2, 3
KEEP_BYTES = 8 << 20  # Claude Code's JSON result carries the agent's last message whole
NOT_SUBMITTED = "the agent ended without submitting the step through workflow_continue"
ASKING = Request()  # the driver asks as the store's one owner, as the agent's local server does


class Service(Protocol):  # handrail.service.core.Service, as the driver uses it
    runs: Any

    def call(self, name: str, arguments: Any, request: Request = ...) -> Any: ...


@dataclass(frozen=True, slots=True)
class Plan:
    """What `handrail drive` was asked."""

    workspace: str
    program: str  # the harness's program: `claude`, or --agent-command
    server: tuple[str, ...]  # this handrail's MCP server: the program and its arguments
    hooks: Mapping[str, Any]  # the gate's hooks for the run's store, shaped for the agent
    env: Mapping[str, str]
    agent: str = "claude-code"  # a name of drive.agents.AGENTS
    server_env: Mapping[str, str] = field(default_factory=dict)
    workflow: str | None = None
    resume: str | None = None
    goal: str = ""
    context: Mapping[str, Any] = field(default_factory=dict)
    attempts: int = 3
    max_usd: float | None = None
    max_minutes: float | None = None
    wait: bool = True
    poll_seconds: float = 1.0
    agents: int = 1  # at a parallel loop, this many agent processes at once
    session: str = "per-step"  # per-run: each step's process goes on with the last one's session
    price: Price | None = None  # --price: the cost of counts a harness reports without one


@dataclass
class StepReport:
    step: str
    title: str
    at: int  # the run's accepted steps when this step began: a loop's steps share an id
    attempts: int = 0
    accepted: bool = False
    usage: list[Usage] = field(default_factory=list)
    issues: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)  # its last attempt's checks: "label: passed"

    def attempted(self) -> int:
        """One more attempt at the step: which one it is."""
        self.attempts += 1
        return self.attempts

    work: str = ""  # a parallel loop: where each branch's work is

    @property
    def cost_usd(self) -> float:
        return sum(u.cost_usd for u in self.usage)

    @property
    def tokens(self) -> int:
        return sum(u.input_tokens + u.output_tokens for u in self.usage)


@dataclass
class Outcome:
    exit_code: int
    run_id: str | None
    status: str
    reason: str
    workflow: str = ""
    steps: list[StepReport] = field(default_factory=list)

    @property
    def cost_usd(self) -> float:
        return sum(s.cost_usd for s in self.steps)


class Watcher(Protocol):  # drive.live's: what is shown of each step while it runs
    def began(self, key: Any, step: str, attempt: int, agent: str) -> None: ...

    def ended(self, key: Any, accepted: bool, cost_usd: float) -> None: ...


class _Unwatched:
    def began(self, key: Any, step: str, attempt: int, agent: str) -> None:
        return None

    def ended(self, key: Any, accepted: bool, cost_usd: float) -> None:
        return None


class Driver:
    def __init__(
        self, service: Service, plan: Plan, say: Callable[[str], None], watch: Watcher | None = None
    ) -> None:
        self.service = service
        self.plan = plan
        self.say = say
        self.watch = watch or _Unwatched()
        self.started = time.monotonic()
        self.steps: list[StepReport] = []
        self.spent = 0.0  # the run's recorded cost, earlier drives' included
        self.session: str | None = None  # --session per-run: the run's harness session
        self.fan_in = ""  # where the last parallel loop's branches did their work, for the next step

    # -- the run ------------------------------------------------------------------------
    def drive(self) -> Outcome:
        try:
            run_id = self._begin()
        except HandrailError as exc:  # no such workflow or run, or arguments it refuses
            return Outcome(EXIT_USAGE, self.plan.resume, "not started", exc.message)
        try:
            return self._loop(run_id)
        except HandrailError as exc:
            return self._end(EXIT_NOT_COMPLETED, run_id, exc.message)

    def _begin(self) -> str:
        if self.plan.resume is not None:
            run = self._read(self.plan.resume)
            self.say(f"resuming run {run.id} ({run.workflow_id}) at {_step_id(run) or run.status}")
            return run.id
        started = self.service.call(
            "workflow_start",
            {
                "workflowId": self.plan.workflow,
                "goal": self.plan.goal or f"a run of {self.plan.workflow}, driven",
                "workspace": self.plan.workspace,
                **({"context": dict(self.plan.context)} if self.plan.context else {}),
            },
            ASKING,
        )
        run_id = str(started["runId"])
        self.say(f"started run {run_id} ({self.plan.workflow})")
        return run_id

    def _read(self, run_id: str) -> RunRecord:
        run: RunRecord = self.service.runs.run(ASKING, run_id)
        return run

    def _loop(self, run_id: str) -> Outcome:
        self.spent = self._spent_before(run_id)
        if self.plan.session == "per-run":
            self.session = self._session_before(run_id)
        while True:
            run = self._read(run_id)
            if run.status == RunStatus.COMPLETED:
                return self._end(EXIT_COMPLETED, run_id, "completed")
            if run.status == RunStatus.ABANDONED:
                return self._end(EXIT_NOT_COMPLETED, run_id, "the run was abandoned")
            if run.status == RunStatus.AWAITING_APPROVAL:
                if not self._wait_for_person(run):
                    return self._end(EXIT_WAITING, run_id, f"step '{_step_id(run)}' waits for a person")
                continue
            crossed = self._budget_crossed(self.spent)
            if crossed:
                return self._end(EXIT_NOT_COMPLETED, run_id, crossed)
            loop = parallel.waiting_loop(run)
            if loop is not None:
                stopped = self._branches(run, loop)
                if stopped:
                    return self._end(EXIT_NOT_COMPLETED, run_id, stopped)
                continue
            report = self._step(run)
            crossed = self._budget_crossed(self.spent)
            if not report.accepted and (crossed or report.attempts >= self.plan.attempts):
                last = "; ".join(report.issues) or NOT_SUBMITTED
                tries = f"{report.attempts} attempt{'s' * (report.attempts != 1)}"
                why = crossed or f"step '{report.step}' was not accepted after {tries}"
                return self._end(EXIT_NOT_COMPLETED, run_id, f"{why}: {last}")

    def _step(self, run: RunRecord) -> StepReport:
        """One attempt at the run's current step; the step's report, kept across attempts."""
        step = _step_id(run) or ""
        report = next((s for s in self.steps if (s.step, s.at) == (step, run.accepted)), None)
        if report is None:
            title = str((run.position.get("step") or {}).get("title") or step)
            report = StepReport(step, title, run.accepted)
            self.steps.append(report)
        report.attempts += 1
        seen = len(self.service.runs.ledger.events(run.id))
        prompt = self._prompt(run, report.issues)
        self.say(f"step {step}: attempt {report.attempts} of {self.plan.attempts}, {self.plan.agent}")
        key = (step, run.accepted)
        self.watch.began(key, step, report.attempts, self.plan.agent)
        finished, used = self._process(prompt, run, self.session)
        if self.plan.session == "per-run" and used.session:
            self.session = used.session
        report.usage.append(used)
        self.spent += used.cost_usd
        self._record_usage(run.id, step, used, report.attempts, finished, self._budget_crossed(self.spent))
        report.checks = self._checks(run.id, seen)
        after = self._read(run.id)
        moved = after.accepted > run.accepted or after.status in (
            RunStatus.COMPLETED,
            RunStatus.AWAITING_APPROVAL,
        )
        elapsed = time.monotonic() - self.started
        self.watch.ended(key, moved, report.cost_usd)
        if moved:  # a step waiting for a person passed its rules and checks: the person decides
            report.accepted, report.issues = True, []
            self.fan_in = ""
            self.say(
                f"step {step}: accepted after {report.attempts} attempt(s), "
                f"${report.cost_usd:.4f}, {elapsed:.0f}s"
            )
        else:
            report.issues = self._issues(run.id, seen, finished)
            self.say(f"step {step}: not accepted: {'; '.join(report.issues)}")
        return report

    def _process(
        self, prompt: str, run: RunRecord, resume: str | None = None
    ) -> tuple[processes.Finished, Usage]:
        """One agent process run to its end, and what it reported."""
        agent = AGENTS[self.plan.agent]
        with tempfile.TemporaryDirectory(prefix="handrail-drive-") as scratch:
            given = Attempt(
                self.plan.program,
                prompt,
                self.plan.server,
                self.plan.server_env,
                self.plan.hooks,
                run.accepted,
                Path(scratch),
                self.plan.env,
                resume,
                self.plan.workspace,
                run.id,
            )
            argv, added = agent.start(given)
            finished = processes.run(
                argv,
                self.plan.workspace,
                self._time_left(),
                KEEP_BYTES,
                env={**self.plan.env, **added},
                separate_errors=True,
                die_with_parent=True,
            )
        used = agent.usage(processes.decode_tail(finished.output, finished.truncated))
        return finished, used if self.plan.price is None else self.plan.price.of(used)

    def _branches(self, run: RunRecord, loop: str) -> str | None:
        """The parallel loop `loop`'s branches, worked by up to --agents processes at once,
        each claiming its own; None once the run moved on, else why the driver stops."""
        store = self.service.runs.ledger.store
        branches = store.list_runs(parent_id=run.id)
        where = parallel.places(self.plan.workspace, run, branches)
        report = StepReport(loop, loop, run.accepted)
        self.steps.append(report)
        lock = threading.Lock()

        key = (loop, run.accepted)

        def agent(text: str) -> None:
            with lock:
                attempt = report.attempted()
                self.watch.began(key, loop, attempt, self.plan.agent)
            finished, used = self._process(text, run)
            with lock:
                report.usage.append(used)
                self.spent += used.cost_usd
                crossed = self._budget_crossed(self.spent)
            self._record_usage(run.id, loop, used, attempt, finished, crossed)

        self.say(f"loop {loop}: {len(where)} branches, up to {self.plan.agents} agents at once")
        most = self.plan.attempts * max(1, len(where))
        pool = parallel.Pool(
            self.plan.agents, most, self._read, self.say, lambda: self._budget_crossed(self.spent)
        )
        stopped = pool.work(
            run.id, lambda: store.list_runs(parent_id=run.id), agent, parallel.prompt(run, loop, where)
        )
        report.accepted = stopped is None and self._read(run.id).accepted > run.accepted
        report.work = parallel.fan_in(loop, where)
        self.watch.ended(key, report.accepted, report.cost_usd)
        if stopped is None:
            self.fan_in = parallel.fan_in(loop, where)
            self.say(f"loop {loop}: its branches are done, ${report.cost_usd:.4f}")
        return stopped

    def _checks(self, run_id: str, seen: int) -> list[str]:
        """The checks the step's evidence ran since the attempt began, each with its outcome."""
        checks = [e.data for e in self.service.runs.ledger.events(run_id)[seen:] if e.type == EventType.CHECK]
        # named by the author's message, as the dashboard names them, else by what they ran
        named = [str(c.get("message") or c.get("description") or c.get("check")) for c in checks]
        return [
            f"{name}: {'passed' if c.get('passed') else 'failed'}"
            for name, c in zip(named, checks, strict=True)
        ]

    def _issues(self, run_id: str, seen: int, finished: processes.Finished) -> list[str]:
        """The issues of the last rejection since the attempt began, else why there is none."""
        events = self.service.runs.ledger.events(run_id)[seen:]
        rejected = [e for e in events if e.type == EventType.REJECTED]
        if rejected:
            issues = rejected[-1].data.get("issues") or []
            return [_issue_text(i) for i in issues] or ["the output was rejected"]
        if finished.timed_out:
            return ["the time budget (--max-minutes) ended the agent"]
        if finished.error:
            return [finished.error]
        if finished.exit_code not in (0, None):
            tail = processes.decode_tail(finished.errors, False).strip().splitlines()[-1:]
            return [f"the agent exited {finished.exit_code}" + (f": {tail[0][:300]}" if tail else "")]
        return [NOT_SUBMITTED]

    def _prompt(self, run: RunRecord, issues: Sequence[str]) -> str:
        # the position holds the step as workflow_next gave it, its guidance rendered
        step = run.position.get("step") or {}
        guidance = (run.position.get("guidance") or {}).get("prompt") or step.get("prompt") or ""
        lines = [
            f"handrail drives you through one step of run {run.id} (workflow {run.workflow_id}).",
            f"Goal: {run.goal}" if run.goal else "",
            "",
            str(guidance),
            "",
            f"Do this step only. When it is done, submit it yourself: call handrail's workflow_continue "
            f'tool with runId "{run.id}", stepId "{step.get("id", "")}", your output, and the context the '
            "step asks you to set. Once it is accepted, or waits for a person, stop: another session "
            "does the next step.",
        ]
        if self.fan_in:
            lines += ["", self.fan_in]
        if issues:
            lines += ["", "Your last attempt at this step was not accepted. Its issues:"]
            lines += [f"- {issue}" for issue in issues]
        return "\n".join(line for line in lines if line is not None)

    # -- a person ----------------------------------------------------------------------
    def _wait_for_person(self, run: RunRecord) -> bool:
        """Say where to approve; then wait until the run moves (True), or do not (False)."""
        where = f"`handrail runs approve {run.id}` or the dashboard (`handrail dashboard`)"
        self.say(f"step {_step_id(run)} of run {run.id} waits for a person: approve it with {where}")
        if not self.plan.wait:
            return False
        while self._read(run.id).status == RunStatus.AWAITING_APPROVAL:
            time.sleep(self.plan.poll_seconds)
        return True

    # -- cost --------------------------------------------------------------------------
    def _spent_before(self, run_id: str) -> float:
        """What earlier drives of this run spent: --max-usd counts the whole run."""
        events = self.service.runs.ledger.events(run_id)
        return sum(float(e.data.get("costUsd") or 0) for e in events if e.type == EventType.USAGE)

    def _session_before(self, run_id: str) -> str | None:
        """The harness session the run's last agent process reported, for --resume RUN."""
        events = self.service.runs.ledger.events(run_id)
        found = [e.data.get("session") for e in events if e.type == EventType.USAGE]
        sessions = [s for s in found if isinstance(s, str) and s]
        return sessions[-1] if sessions else None

    def _budget_crossed(self, spent: float) -> str | None:
        if self.plan.max_usd is not None and spent > self.plan.max_usd:
            return f"the budget of ${self.plan.max_usd:g} is crossed (${spent:.4f} spent)"
        if self.plan.max_minutes is not None and self._time_left() <= 0:
            return f"the budget of {self.plan.max_minutes:g} minutes is crossed"
        return None

    def _time_left(self) -> float:
        if self.plan.max_minutes is None:
            return float("inf")
        return self.plan.max_minutes * 60 - (time.monotonic() - self.started)

    def _record_usage(
        self,
        run_id: str,
        step: str,
        used: Usage,
        attempt: int,
        finished: processes.Finished,
        crossed: str | None,
    ) -> None:
        """The usage event; `crossed`: the budget this process crossed, which the run then waits on."""
        data = {
            "agent": self.plan.agent,
            "attempt": attempt,
            "durationMs": finished.duration_ms,
            **({"exitCode": finished.exit_code} if finished.exit_code is not None else {}),
            **used.as_event(),
            **({"stopped": crossed} if crossed else {}),
        }
        ledger = self.service.runs.ledger
        for _ in range(10):  # the agent's own writes may race this one: read again and retry
            run = self._read(run_id)
            if not machine.allows(run.status, EventType.USAGE):  # abandoned meanwhile: nothing to add to
                return
            try:
                ledger.write(run, RunUpdate(), [NewEvent(EventType.USAGE, step, data)], run.owner)
                return
            except Conflict:
                continue

    def _end(self, code: int, run_id: str, reason: str) -> Outcome:
        run = self._read(run_id)
        return Outcome(code, run_id, str(run.status), reason, run.workflow_id, self.steps)


def _step_id(run: RunRecord) -> str | None:
    step = run.position.get("step") if isinstance(run.position, dict) else None
    return str(step["id"]) if isinstance(step, dict) and "id" in step else None


def _issue_text(issue: Any) -> str:
    if isinstance(issue, dict):
        return str(issue.get("message") or issue.get("issue") or issue)
    return str(issue)
