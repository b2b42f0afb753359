"""What the runs of a workflow tell (spec/stats.md), computed in the database.

Each figure is an aggregate query written once in the SQL SQLite and PostgreSQL
share (window functions included), with `DIALECT` snippets for the few things they
spell differently: a time as epoch milliseconds, a field of a JSON column, the
elements of a JSON array, an ordering by bytes. Percentiles are nearest-rank and
computed in SQL too: no event is loaded into Python, only one row per workflow
version, step, check or counted message.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

TOP = 5  # messages and failing lines listed per step or check
MESSAGE_CHARS = 500  # a listed message is cut to this many characters


class Aggregates(Protocol):
    """What a store offers the statistics: its dialect and one read-only query."""

    dialect: str

    def aggregate(self, sql: str, values: Sequence[Any]) -> list[tuple[Any, ...]]: ...


@dataclass(frozen=True, slots=True)
class StatsFilter:
    """Which runs count: of one workflow (or all), started at `since` or later and before
    `until` (ISO times as the store keeps them), owned by `person`."""

    workflow_id: str | None = None
    since: str | None = None
    until: str | None = None
    person: str | None = None


def _plain(col: str) -> str:
    """`col` when it holds JSON in the plain form, else NULL: data kept in the escaped form
    (it held a lone surrogate, or an integer past 64 bits) starts with a space, and
    PostgreSQL refuses to read such a string as JSON at all. Both dialects skip it alike."""
    return f"(CASE WHEN substr({col}, 1, 1) = ' ' THEN NULL ELSE {col} END)"


DIALECT: dict[str, dict[str, Callable[..., str]]] = {
    "sqlite": {
        "step": lambda col: f"json_extract({_plain(col)}, '$.step.id')",
        "bytes": lambda col: col,  # BINARY: UTF-8 bytes, the code point order
    },
    "postgresql": {
        "step": lambda col: f"(CAST({_plain(col)} AS json) -> 'step' ->> 'id')",
        # compared as bytes, not by the locale's rules: the code point order
        "bytes": lambda col: f'{col} COLLATE "C"',
    },
}


def last_line(text: str | None) -> str | None:
    """SQLite's `last_line`: the last line of `text`, trailing newlines left out."""
    return None if text is None else text.rstrip("\n").rsplit("\n", 1)[-1]


def _nearest_rank(rank: str, count: str, percent: int) -> str:
    """The nearest-rank percentile's rank test: rank = ceil(percent / 100 * count)."""
    return f"{rank} = ({count} * {percent} + 99) / 100"


class _Query:
    def __init__(self, store: Aggregates, where: StatsFilter) -> None:
        self.store = store
        self.d = DIALECT[store.dialect]
        self.mark = "?" if store.dialect == "sqlite" else "%s"
        clauses, self.values = [], []
        for column, op, value in (
            ("workflow_id", "=", where.workflow_id),
            ("created_at", ">=", where.since),
            ("created_at", "<", where.until),
            ("owner", "=", where.person),
        ):
            if value is not None:
                clauses.append(f"{column} {op} {self.mark}")
                self.values.append(value)
        # the summary tables repeat the run's columns these filters read
        self.where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        self.runs = (
            "r AS (SELECT id, workflow_id AS wf, workflow_version AS ver, status, position, "
            f"source_hash, created_at FROM runs{self.where})"
        )

    def __call__(self, sql: str) -> list[tuple[Any, ...]]:
        joined = " " if sql.startswith("SELECT") else ", "
        return self.store.aggregate(f"WITH {self.runs}{joined}{sql}", self.values)


def _versions(q: _Query) -> list[tuple[Any, ...]]:
    return q(
        "SELECT wf, ver, COUNT(*), "
        "SUM(CASE WHEN status = 'completed' THEN 1 ELSE 0 END), "
        "SUM(CASE WHEN status = 'abandoned' THEN 1 ELSE 0 END), "
        "SUM(CASE WHEN status IN ('active', 'awaiting_approval') THEN 1 ELSE 0 END), "
        "MIN(created_at), MIN(source_hash) FROM r GROUP BY wf, ver"
    )


def _positions(q: _Query) -> list[tuple[Any, ...]]:
    """Where runs stand now, per step and status (abandoned runs stand where they were
    left), and how many of them have made no submission there (reached all the same)."""
    d = q.d
    return q(
        f"p AS (SELECT id, wf, ver, {d['step']('position')} AS step, status FROM r) "
        "SELECT wf, ver, step, status, COUNT(*), SUM(CASE WHEN EXISTS (SELECT 1 FROM stats_visits x "
        "WHERE x.run_id = p.id AND x.step_id = p.step) THEN 0 ELSE 1 END) "
        "FROM p WHERE step IS NOT NULL GROUP BY wf, ver, step, status"
    )


def _pct(value: str, rank: str, percent: int) -> str:
    return f"MAX(CASE WHEN {_nearest_rank(rank, 'n', percent)} THEN {value} END)"


def _at_ranks(rank: str) -> str:
    """The rows whose `rank` is the median's or the p90's: all `_pct` reads."""
    return f"({_nearest_rank(rank, 'n', 50)} OR {_nearest_rank(rank, 'n', 90)})"


KEYS = (("workflow_id", "wf"), ("workflow_version", "ver"), ("step_id", "step_id"))


def _parts(q: _Query) -> list[tuple[str, list[Any]]]:
    """The statements of the figures drawn from the summary tables (store/summary.py), each
    SELECT's rows tagged by kind and padded to (kind, wf, ver, step, label, idx, a, b, c, d,
    e, f, g): the steps (their visits and approval waits), the issues, the gate denials,
    the checks."""
    d = q.d
    # PostgreSQL groups and partitions the texts by bytes, not by the locale's rules
    keys = ", ".join(f"{d['bytes'](col)} AS {name}" for col, name in KEYS)
    where = q.where
    steps = [
        f"sv AS (SELECT {keys}, run_id, rejected, awaiting, approved, declined, accepted, "
        "rejected + declined + 1 AS attempts, spent_ms AS spent, reached, first_accepted "
        f"FROM stats_visits{where})",
        # each rank ordered once; only the rows at a percentile's rank (or the maximum) are kept
        "rv AS (SELECT wf, ver, step_id, attempts, spent, "
        "ROW_NUMBER() OVER (PARTITION BY wf, ver, step_id ORDER BY attempts) AS ra, "
        "ROW_NUMBER() OVER s AS rs, COUNT(*) OVER s AS n FROM sv WHERE accepted > 0 "
        "WINDOW s AS (PARTITION BY wf, ver, step_id ORDER BY spent "
        "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING))",
        f"vr AS (SELECT * FROM rv WHERE ra = n OR {_at_ranks('ra')} OR {_at_ranks('rs')})",
        f"a0 AS (SELECT {keys}, waited_ms AS waited FROM stats_waits{where})",
        "aw AS (SELECT a0.*, ROW_NUMBER() OVER (PARTITION BY wf, ver, step_id ORDER BY waited) AS rk, "
        "COUNT(*) OVER (PARTITION BY wf, ver, step_id) AS n FROM a0)",
    ]
    step_selects = [
        # PostgreSQL types a UNION's columns from its first SELECT: name the padding's types there
        "SELECT 'counts', wf, ver, step_id, CAST(NULL AS text), CAST(NULL AS bigint), "
        "SUM(rejected), SUM(awaiting), SUM(approved), SUM(declined), SUM(accepted), "
        "SUM(first_accepted), SUM(reached) FROM sv GROUP BY wf, ver, step_id",
        f"SELECT 'visits', wf, ver, step_id, NULL, NULL, {_pct('attempts', 'ra', 50)}, "
        f"{_pct('attempts', 'ra', 90)}, MAX(attempts), {_pct('spent', 'rs', 50)}, {_pct('spent', 'rs', 90)}, "
        "NULL, NULL FROM vr GROUP BY wf, ver, step_id",
        f"SELECT 'waits', wf, ver, step_id, NULL, NULL, {_pct('waited', 'rk', 50)}, "
        f"{_pct('waited', 'rk', 90)}, NULL, NULL, NULL, NULL, NULL FROM aw GROUP BY wf, ver, step_id",
    ]
    issues = [
        "im AS (SELECT wf, ver, step_id, message, COUNT(*) AS n, MAX(run_id) AS run "
        f"FROM (SELECT {keys}, message, run_id FROM stats_issues{where}) AS x "
        "GROUP BY wf, ver, step_id, message)",
        "it AS (SELECT im.*, ROW_NUMBER() OVER (PARTITION BY wf, ver, step_id "
        f"ORDER BY n DESC, {d['bytes']('message')}) AS rk FROM im)",
    ]
    issue_selects = [
        "SELECT 'issue', wf, ver, step_id, message, rk, n, NULL, NULL, NULL, NULL, NULL, NULL "
        f"FROM it WHERE rk <= {TOP}",
        "SELECT 'issue-run', wf, ver, step_id, run, rk, NULL, NULL, NULL, NULL, NULL, NULL, NULL "
        f"FROM it WHERE rk <= {TOP}",
    ]
    gate = (
        "SELECT 'gate', wf, ver, step_id, decision, NULL, COUNT(*), NULL, NULL, NULL, NULL, NULL, NULL "
        f"FROM (SELECT {keys}, decision FROM stats_gate{where}) AS g GROUP BY wf, ver, step_id, decision"
    )
    checks = [
        f"c AS (SELECT {keys}, idx, kind, passed, timed_out, duration_ms AS ms, line "
        f"FROM stats_checks{where})",
        # one ordering by duration gives the median and the check's counts; only the first
        # row and the median's are kept
        "cr AS (SELECT c.*, ROW_NUMBER() OVER k AS rk, COUNT(ms) OVER k AS n, COUNT(*) OVER k AS runs, "
        "SUM(passed) OVER k AS passes, SUM(timed_out) OVER k AS timeouts FROM c "
        "WINDOW k AS (PARTITION BY wf, ver, step_id, idx, kind ORDER BY ms "
        "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING))",
        f"cm AS (SELECT * FROM cr WHERE rk = 1 OR {_nearest_rank('rk', 'n', 50)})",
        "fl AS (SELECT wf, ver, step_id, idx, kind, line, COUNT(*) AS n FROM c WHERE passed = 0 "
        "GROUP BY wf, ver, step_id, idx, kind, line)",
        "ft AS (SELECT fl.*, ROW_NUMBER() OVER (PARTITION BY wf, ver, step_id, idx, kind "
        f"ORDER BY n DESC, {d['bytes']('line')}) AS rk FROM fl WHERE line IS NOT NULL)",
    ]
    check_selects = [
        "SELECT 'check', wf, ver, step_id, CAST(kind AS text), CAST(idx AS bigint), MAX(runs), MAX(passes), "
        f"MAX(timeouts), MAX(CASE WHEN ms IS NOT NULL AND {_nearest_rank('rk', 'n', 50)} THEN ms END), "
        "NULL, NULL, NULL FROM cm GROUP BY wf, ver, step_id, idx, kind",
        "SELECT 'line', wf, ver, step_id, line, idx, n, rk, NULL, NULL, NULL, NULL, NULL "
        f"FROM ft WHERE rk <= {TOP}",
    ]
    return [
        ("WITH " + ", ".join(steps) + " " + " UNION ALL ".join(step_selects), q.values * 2),
        ("WITH " + ", ".join(issues) + " " + " UNION ALL ".join(issue_selects), q.values),
        (gate, q.values),
        ("WITH " + ", ".join(checks) + " " + " UNION ALL ".join(check_selects), q.values),
    ]


def _sources(store: Aggregates, hashes: Sequence[str]) -> dict[str, list[str]]:
    """Each workflow source's step ids in the order the document writes them."""
    if not hashes:
        return {}
    mark = "?" if store.dialect == "sqlite" else "%s"
    rows = store.aggregate(
        f"SELECT hash, document FROM workflow_sources WHERE hash IN ({', '.join(mark for _ in hashes)})",
        list(hashes),
    )
    out: dict[str, list[str]] = {}
    for source_hash, document in rows:
        try:
            out[source_hash] = _step_ids(json.loads(bytes(document)).get("steps"))
        except (ValueError, AttributeError):
            out[source_hash] = []
    return out


def _step_ids(steps: Any) -> list[str]:
    ids: list[str] = []
    for step in steps if isinstance(steps, list) else []:
        if isinstance(step, dict):
            if isinstance(step.get("body"), list):
                ids += _step_ids(step["body"])  # a loop's body runs before the loop ends
            if isinstance(step.get("id"), str):
                ids.append(step["id"])
    return ids


def _int(value: Any) -> Any:
    """A count or a time as an int (PostgreSQL sends the padded columns as numeric)."""
    return None if value is None else int(value)


def _seconds(ms: Any) -> float | None:
    return None if ms is None else round(int(ms) / 1000, 3)


def _rate(part: int, whole: int) -> float | None:
    return None if whole == 0 else round(part / whole, 4)


def workflow_stats(store: Aggregates, where: StatsFilter) -> list[dict[str, Any]]:
    """The figures of spec/stats.md: one entry per workflow, its versions kept apart."""
    q = _Query(store, where)
    versions = sorted(_versions(q), key=lambda row: (row[0], row[6], row[1]))
    if not versions:
        return []
    order = _sources(store, sorted({row[7] for row in versions}))
    steps: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    checks: dict[tuple[str, str], dict[tuple[str, int], dict[str, Any]]] = {}

    def step(wf: str, ver: str, step_id: str) -> dict[str, Any]:
        found = steps.setdefault((wf, ver), {})
        if step_id not in found:
            found[step_id] = {
                "id": step_id,
                "reached": 0,
                "accepted": 0,
                "abandoned": 0,
                "active": 0,
                "submissions": 0,
                "rejected": 0,
                "rejectionRate": None,
                "attempts": {"median": None, "p90": None, "max": None},
                "seconds": {"median": None, "p90": None},
                "topIssues": [],
                "approvals": {"approved": 0, "declined": 0, "waitSeconds": {"median": None, "p90": None}},
                "gate": {"denied": 0, "blocked": 0},
            }
        return found[step_id]

    for wf, ver, step_id, status, count, unseen in _positions(q):
        here = step(wf, ver, step_id)
        here["reached"] += _int(unseen)
        if status == "abandoned":
            here["abandoned"] += _int(count)
        elif status in ("active", "awaiting_approval"):
            here["active"] += _int(count)
    rows = [row for sql, values in _parts(q) for row in store.aggregate(sql, values)]
    rows.sort(key=lambda row: (row[0], row[1], row[2], row[3], -1 if row[5] is None else row[5]))
    for kind, wf, ver, step_id, label, idx, *n in rows:
        s = step(wf, ver, step_id)
        if kind == "counts":
            rejected, awaiting, approved, declined, accepted = (_int(x) for x in n[:5])
            submissions = rejected + awaiting + accepted - approved
            s.update(submissions=submissions, rejected=rejected)
            s["rejectionRate"] = _rate(rejected, submissions)
            s["approvals"].update(approved=approved, declined=declined)
            s["accepted"] = _int(n[5])
            s["reached"] += _int(n[6])
        elif kind == "gate" and label in ("deny", "block"):
            s["gate"]["denied" if label == "deny" else "blocked"] += _int(n[0])
        elif kind == "visits":
            s["attempts"] = {"median": _int(n[0]), "p90": _int(n[1]), "max": _int(n[2])}
            s["seconds"] = {"median": _seconds(n[3]), "p90": _seconds(n[4])}
        elif kind == "waits":
            s["approvals"]["waitSeconds"] = {"median": _seconds(n[0]), "p90": _seconds(n[1])}
        elif kind == "issue":
            s["topIssues"].append({"message": label[:MESSAGE_CHARS], "count": _int(n[0])})
        elif kind == "issue-run":
            s["topIssues"][_int(idx) - 1]["run"] = label
        elif kind == "check":
            passed, count = _int(n[1]), _int(n[0])
            checks.setdefault((wf, ver), {})[(step_id, _int(idx))] = {
                "step": step_id,
                "index": _int(idx),
                "type": label,
                "runs": count,
                "passed": passed,
                "passRate": _rate(passed, count),
                "timeouts": _int(n[2]),
                "durationMs": {"median": _int(n[3])},
                "failingLines": [],
            }
    for kind, wf, ver, step_id, label, idx, *n in rows:
        if kind == "line":
            found = checks[(wf, ver)][(step_id, _int(idx))]["failingLines"]
            found.append({"line": label[:MESSAGE_CHARS], "count": _int(n[0]), "rank": _int(n[1])})
            found.sort(key=lambda f: f["rank"])
    for per_check in checks.values():
        for check in per_check.values():
            for line in check["failingLines"]:
                del line["rank"]

    out: dict[str, dict[str, Any]] = {}
    for wf, ver, started, completed, abandoned, active, first, source_hash in versions:
        listed = order.get(source_hash, [])
        found = steps.get((wf, ver), {})
        ranked = {s: i for i, s in enumerate(listed)}
        entry = {
            "version": ver,
            "firstRun": first,
            "runs": {
                "started": int(started),
                "completed": int(completed),
                "abandoned": int(abandoned),
                "active": int(active),
            },
            "steps": sorted(found.values(), key=lambda s: (ranked.get(s["id"], len(ranked)), s["id"])),
            "checks": sorted(
                checks.get((wf, ver), {}).values(),
                key=lambda c: (ranked.get(c["step"], len(ranked)), c["step"], c["index"]),
            ),
        }
        workflow = out.setdefault(wf, {"id": wf, "versions": [], "comparisons": []})
        workflow["versions"].append(entry)
    for workflow in out.values():
        workflow["comparisons"] = _comparisons(workflow["versions"])
    return list(out.values())


def _comparisons(versions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each step's rejection rate across the versions that have it, where it changed."""
    if len(versions) < 2:
        return []
    rates: dict[str, list[dict[str, Any]]] = {}
    for v in versions:
        for s in v["steps"]:
            if s["rejectionRate"] is not None:
                rates.setdefault(s["id"], []).append({"version": v["version"], "value": s["rejectionRate"]})
    return [
        {"step": step_id, "figure": "rejectionRate", "values": values}
        for step_id, values in rates.items()
        if len(values) > 1 and len({v["value"] for v in values}) > 1
    ]
