"""The statistics' summary tables (spec/stats.md), kept up to date as events are written.

`handrail stats` reads these instead of the event log: one row per visit of a step
(its counts, attempts, time to acceptance), per approval decision (its wait), per
check run, per listed issue and per gate denial, each carrying the run's workflow,
version, owner and start so that every filter of the command applies to it directly.
The run row's `stats` column keeps what the next event's summary depends on (`Marks`:
where the current visit began, when an approval was last asked, the last check's
place, which steps the run reached and had accepted); it is read with the run, so a
write works its summary out before it is sent, and the run's version check keeps it
current.

Both stores write the summary in the transaction that appends the events (PostgreSQL:
in the same statement), so it can never disagree with the log. `FILL` (the migration, and anything that
writes event rows straight into the tables) derives the same rows from the events
alone, in SQL.
"""

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from handrail.model.slotted import Slotted
from handrail.store.chain import EventRow

STEP_EVENTS = ("started", "rejected", "awaiting_approval", "approved", "declined", "accepted")
COUNTED = ("rejected", "awaiting_approval", "approved", "declined", "accepted")
SUMMARISED = frozenset((*STEP_EVENTS, "check", "gate"))
GATE_DECISIONS = ("deny", "block")  # the only decisions the figures count


# classes of slots (model/slotted.py) and a NamedTuple (Marks, kept as a JSON array), not
# dataclasses: a gate hook's write plans a summary, and need not load dataclasses (with
# inspect and dis) for it
class RunKeys(Slotted):
    """What every summary row of a run repeats, so the figures filter without a join."""

    __slots__ = ("created_at", "owner", "run_id", "version", "workflow_id")

    def __init__(
        self,
        run_id: str,
        workflow_id: str,
        version: str,
        owner: str,
        created_at: str,
    ) -> None:
        self.run_id = run_id
        self.workflow_id = workflow_id
        self.version = version
        self.owner = owner
        self.created_at = created_at

    def values(self) -> tuple[str, str, str, str]:
        return (self.workflow_id, self.version, self.owner, self.created_at)


class Marks(NamedTuple):
    """Where a run's summary stands, as its `stats` column keeps it (a JSON array in
    this order): read before a write, made anew by `fold` after it."""

    since_seq: int  # the run's last `started` or `accepted` (0: none yet)
    since_ms: int | None
    asked_ms: int | None  # the latest `awaiting_approval`
    check_seq: int  # the last check event, and its place among its submission's checks
    check_idx: int
    steps: dict[str, int]  # step -> 1 once accepted, else 0 (fold changes a copy)


def ms(at: str) -> int:
    """An ISO time as the store writes it, in epoch milliseconds."""
    moment = datetime.fromisoformat(at.replace("Z", "+00:00"))
    return round(moment.timestamp() * 1000)


def _data(text: str) -> dict[str, Any] | None:
    """The event's fields; None when kept in the escaped form (see spec/stats.md), whose
    fields the figures do not read."""
    if text.startswith(" "):
        return None
    found = json.loads(text)
    return found if isinstance(found, dict) else {}


def _last_line(text: str) -> str | None:
    """A failed check's output as the statistics keep it (its last line)."""
    from handrail.store.stats import last_line  # lazy: a gate hook's write needs no statistics' queries

    return last_line(text)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


class Summary(Slotted):
    """The summary rows a write adds, by table, and the run's marks after them."""

    __slots__ = ("checks", "gates", "issues", "marks", "visits", "waits")

    def __init__(
        self,
        marks: Marks,
        visits: dict[tuple[int, str], list[Any]],  # (since_seq, step) -> the visit's figures
        waits: list[tuple[Any, ...]],
        checks: list[tuple[Any, ...]],
        issues: list[tuple[Any, ...]],
        gates: list[tuple[Any, ...]],
    ) -> None:
        self.marks = marks
        self.visits = visits
        self.waits = waits
        self.checks = checks
        self.issues = issues
        self.gates = gates


def fold(marks: Marks, rows: Sequence[EventRow]) -> Summary:
    """The summary rows `rows` add to a run whose marks were `marks`, and its marks after
    them (kept in locals while the rows are folded, the new Marks made once at the end)."""
    since_seq, since_ms, asked_ms, check_seq, check_idx, _ = marks
    steps = dict(marks.steps)
    visits: dict[tuple[int, str], list[Any]] = {}
    waits: list[tuple[Any, ...]] = []
    checks: list[tuple[Any, ...]] = []
    issues: list[tuple[Any, ...]] = []
    gates: list[tuple[Any, ...]] = []
    for row in rows:
        kind, step = row.type, row.step_id
        if kind == "check":
            data = _data(row.data)
            check_idx = check_idx + 1 if row.seq == check_seq + 1 else 0
            check_seq = row.seq
            passed = 1 if data is not None and data.get("passed") is True else 0
            output = data.get("output") if data is not None else None
            if step is None:
                continue  # a figure is per step
            checks.append(
                (
                    row.seq,
                    step,
                    check_idx,
                    data.get("check") if data is not None and isinstance(data.get("check"), str) else None,
                    passed,
                    1 if data is not None and data.get("timedOut") is True else 0,
                    _number(data.get("durationMs")) if data is not None else None,
                    _last_line(output) if not passed and isinstance(output, str) else None,
                )
            )
            continue
        if kind == "gate":
            data = _data(row.data)
            decision = data.get("decision") if data is not None else None
            if step is not None and decision in GATE_DECISIONS:
                gates.append((row.seq, step, decision))
            continue
        if kind not in STEP_EVENTS:
            continue
        at = ms(row.at)
        if kind in ("approved", "declined") and asked_ms is not None and step is not None:
            waits.append((row.seq, step, at - asked_ms))
        if kind == "rejected" and step is not None:
            data = _data(row.data)
            listed = data.get("issues") if data is not None else None
            for n, message in enumerate(listed if isinstance(listed, list) else []):
                if message is None:
                    continue
                text = message if isinstance(message, str) else json.dumps(message, separators=(",", ":"))
                issues.append((row.seq, n, step, text))
        if step is not None:
            visit = visits.get((since_seq, step))
            if visit is None:
                # counts of each COUNTED type, spent, attempts, first reach, first acceptance
                visit = visits[(since_seq, step)] = [0, 0, 0, 0, 0, None, 1, 0, 0]
                if step not in steps:
                    steps[step] = 0
                    visit[7] = 1
            if kind in COUNTED:
                visit[COUNTED.index(kind)] += 1
            if kind in ("rejected", "declined"):
                visit[6] += 1
            if kind == "accepted":
                visit[5] = None if since_ms is None else at - since_ms
                if steps.get(step) == 0:
                    steps[step] = 1
                    visit[8] = 1
        if kind in ("started", "accepted"):
            since_seq = max(since_seq, row.seq)
            since_ms = at if since_ms is None else max(since_ms, at)
        elif kind == "awaiting_approval":
            asked_ms = at if asked_ms is None else max(asked_ms, at)
    marks = Marks(since_seq, since_ms, asked_ms, check_seq, check_idx, steps)
    return Summary(marks, visits, waits, checks, issues, gates)


KEYS = "run_id, workflow_id, workflow_version, owner, created_at"
VISIT_COUNTS = ("rejected", "awaiting", "approved", "declined", "accepted")
VISIT_COLUMNS = (
    f"{KEYS}, since_seq, step_id, {', '.join(VISIT_COUNTS)}, spent_ms, attempts, reached, first_accepted"
)
_ADDED = ", ".join(
    f"{c} = stats_visits.{c} + excluded.{c}" for c in (*VISIT_COUNTS, "reached", "first_accepted")
)
VISIT_CONFLICT = (
    "ON CONFLICT (workflow_id, workflow_version, step_id, run_id, since_seq) "
    f"DO UPDATE SET {_ADDED}, attempts = stats_visits.attempts + excluded.attempts - 1, "
    "spent_ms = COALESCE(excluded.spent_ms, stats_visits.spent_ms)"
)
# each table's added columns, with the types PostgreSQL is told their values have
TABLES = (
    ("stats_waits", "seq, step_id, waited_ms", ("integer", "text", "bigint")),
    (
        "stats_checks",
        "seq, step_id, idx, kind, passed, timed_out, duration_ms, line",
        ("integer", "text", "integer", "text", "integer", "integer", "double precision", "text"),
    ),
    ("stats_issues", "seq, n, step_id, message", ("integer", "integer", "text", "text")),
    ("stats_gate", "seq, step_id, decision", ("integer", "text", "text")),
)
VISIT_TYPES = ("integer", "text", *["integer"] * 5, "bigint", "integer", "integer", "integer")


def keys_of(run: Any) -> RunKeys:
    """A RunRecord's keys."""
    return RunKeys(run.id, run.workflow_id, run.workflow_version, run.owner, run.created_at)


def read_marks(text: str | None) -> Marks:
    """The marks a run's `stats` column holds (NULL: none yet)."""
    if text is None:
        return Marks(0, None, None, 0, 0, {})
    since_seq, since_ms, asked_ms, check_seq, check_idx, steps = json.loads(text)
    return Marks(since_seq, since_ms, asked_ms, check_seq, check_idx, steps)


def plan(stats: str | None, rows: Sequence[EventRow]) -> tuple[Summary | None, str | None]:
    """The summary rows `rows` add to a run whose `stats` column is `stats`, and the
    column's new text (None, None: the rows change no figure)."""
    if not any(row.type in SUMMARISED for row in rows):
        return None, None
    summary = fold(read_marks(stats), rows)
    return summary, json.dumps(summary.marks, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _rows(keys: RunKeys, summary: Summary) -> list[tuple[str, str, list[tuple[Any, ...]]]]:
    run = (keys.run_id, *keys.values())
    found = [
        (
            "stats_visits",
            VISIT_COLUMNS,
            [(*run, since, step, *v) for (since, step), v in summary.visits.items()],
        )
    ]
    for (table, columns, _), added in zip(
        TABLES, (summary.waits, summary.checks, summary.issues, summary.gates), strict=True
    ):
        found.append((table, f"{KEYS}, {columns}", [(*run, *r) for r in added]))
    return [(table, columns, values) for table, columns, values in found if values]


def insert(db: Any, keys: RunKeys, summary: Summary | None, mark: str) -> None:
    """Write `summary` on `db`, inside the transaction that appends its events."""
    if summary is None:
        return
    cursor = db.cursor()
    try:
        for table, columns, values in _rows(keys, summary):
            marks = ", ".join([mark] * len(values[0]))
            conflict = VISIT_CONFLICT if table == "stats_visits" else ""
            cursor.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks}) {conflict}", values)
    finally:
        cursor.close()


def typed_inserts(keys: RunKeys, summary: Summary | None, after: str) -> tuple[list[str], list[Any]]:
    """PostgreSQL: `summary`'s inserts as data-modifying WITH clauses that write only when
    the clause `after` returned a row (the run moved), and their values."""
    if summary is None:
        return [], []
    types = dict([("stats_visits", VISIT_TYPES)] + [(t, types) for t, _, types in TABLES])
    clauses: list[str] = []
    values: list[Any] = []
    for n, (table, columns, found) in enumerate(_rows(keys, summary)):
        row = "(" + ", ".join(["%s::text"] * 5 + [f"%s::{t}" for t in types[table]]) + ")"
        conflict = VISIT_CONFLICT if table == "stats_visits" else ""
        clauses.append(
            f"s{n} AS (INSERT INTO {table} ({columns}) SELECT v.* FROM {after}, "
            f"(VALUES {', '.join(row for _ in found)}) AS v {conflict})"
        )
        values += [v for r in found for v in r]
    return clauses, values
