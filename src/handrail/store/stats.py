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


def _ms_sqlite(at: str) -> str:
    # times are stored as 2026-01-02T03:04:05.678Z: seconds from strftime, milliseconds as written
    return f"(CAST(strftime('%s', {at}) AS INTEGER) * 1000 + CAST(substr({at}, 21, 3) AS INTEGER))"


def _ms_postgres(at: str) -> str:
    return f"CAST(EXTRACT(EPOCH FROM CAST({at} AS timestamptz)) * 1000 AS bigint)"


def _plain(col: str) -> str:
    """`col` when it holds JSON in the plain form, else NULL: data kept in the escaped form
    (it held a lone surrogate, or an integer past 64 bits) starts with a space, and
    PostgreSQL refuses to read such a string as JSON at all. Both dialects skip it alike."""
    return f"(CASE WHEN substr({col}, 1, 1) = ' ' THEN NULL ELSE {col} END)"


def _pg(col: str) -> str:
    return f"CAST({_plain(col)} AS json)"


DIALECT: dict[str, dict[str, Callable[..., str]]] = {
    "sqlite": {
        "ms": _ms_sqlite,
        "text": lambda col, key: f"json_extract({_plain(col)}, '$.{key}')",
        "true": lambda col, key: f"(json_type({_plain(col)}, '$.{key}') = 'true')",
        "number": lambda col, key: f"json_extract({_plain(col)}, '$.{key}')",
        "step": lambda col: f"json_extract({_plain(col)}, '$.step.id')",
        "elements": lambda col, key: f"json_each({_plain(col)}, '$.{key}') AS j",
        "bytes": lambda col: col,  # BINARY: UTF-8 bytes, the code point order
        "last_line": lambda col: f"last_line({col})",
    },
    "postgresql": {
        "ms": _ms_postgres,
        "text": lambda col, key: f"({_pg(col)} ->> '{key}')",
        "true": lambda col, key: f"(({_pg(col)} ->> '{key}') = 'true')",
        "number": lambda col, key: f"CAST({_pg(col)} ->> '{key}' AS double precision)",
        "step": lambda col: f"({_pg(col)} -> 'step' ->> 'id')",
        "elements": lambda col, key: f"json_array_elements_text({_pg(col)} -> '{key}') AS j(value)",
        "bytes": lambda col: f'{col} COLLATE "C"',
        "last_line": lambda col: f"regexp_replace(rtrim({col}, E'\\n'), '^.*\\n', '')",
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
        self.runs = (
            "r AS (SELECT id, workflow_id AS wf, workflow_version AS ver, status, position, "
            f"source_hash, created_at FROM runs{' WHERE ' + ' AND '.join(clauses) if clauses else ''})"
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
    """Where runs stand now, per step and status: abandoned runs stand where they were left."""
    d = q.d
    return q(
        f"p AS (SELECT wf, ver, {d['step']('position')} AS step, status FROM r) "
        "SELECT wf, ver, step, status, COUNT(*) FROM p WHERE step IS NOT NULL GROUP BY wf, ver, step, status"
    )


def _reached(q: _Query) -> list[tuple[Any, ...]]:
    d = q.d
    return q(
        "seen AS ("
        "SELECT r.wf, r.ver, e.step_id AS step, e.run_id FROM r JOIN run_events e ON e.run_id = r.id "
        "WHERE e.step_id IS NOT NULL "
        f"UNION SELECT wf, ver, {d['step']('position')}, id FROM r) "
        "SELECT wf, ver, step, COUNT(*) FROM seen WHERE step IS NOT NULL GROUP BY wf, ver, step"
    )


_STEP_EVENTS = "('started', 'rejected', 'awaiting_approval', 'approved', 'declined', 'accepted')"


def _steps(q: _Query) -> list[tuple[Any, ...]]:
    """Per step: events counted; attempts until accepted and time in the step, per
    acceptance, with their nearest-rank median and p90."""
    d = q.d
    return q(
        "e AS ("
        f"SELECT r.wf, r.ver, ev.run_id, ev.seq, ev.type, ev.step_id, {d['ms']('ev.at')} AS ms "
        f"FROM r JOIN run_events ev ON ev.run_id = r.id WHERE ev.type IN {_STEP_EVENTS}), "
        "v AS (SELECT e.*, "
        "COALESCE(SUM(CASE WHEN type = 'accepted' THEN 1 ELSE 0 END) OVER (PARTITION BY run_id, step_id "
        "ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS visit, "
        "MAX(CASE WHEN type IN ('started', 'accepted') THEN ms END) OVER (PARTITION BY run_id "
        "ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS since FROM e), "
        "sv AS (SELECT wf, ver, step_id, run_id, visit, "
        "SUM(CASE WHEN type IN ('rejected', 'declined') THEN 1 ELSE 0 END) + 1 AS attempts, "
        "MAX(CASE WHEN type = 'accepted' THEN ms - since END) AS spent, "
        "MAX(CASE WHEN type = 'accepted' THEN 1 ELSE 0 END) AS done "
        "FROM v WHERE step_id IS NOT NULL GROUP BY wf, ver, step_id, run_id, visit), "
        "ranked AS (SELECT wf, ver, step_id, attempts, spent, "
        "ROW_NUMBER() OVER (PARTITION BY wf, ver, step_id ORDER BY attempts) AS ra, "
        "ROW_NUMBER() OVER (PARTITION BY wf, ver, step_id ORDER BY spent) AS rs, "
        "COUNT(*) OVER (PARTITION BY wf, ver, step_id) AS n FROM sv WHERE done = 1), "
        "pct AS (SELECT wf, ver, step_id, COUNT(*) AS acceptances, "
        f"MAX(CASE WHEN {_nearest_rank('ra', 'n', 50)} THEN attempts END) AS a50, "
        f"MAX(CASE WHEN {_nearest_rank('ra', 'n', 90)} THEN attempts END) AS a90, "
        "MAX(attempts) AS amax, "
        f"MAX(CASE WHEN {_nearest_rank('rs', 'n', 50)} THEN spent END) AS s50, "
        f"MAX(CASE WHEN {_nearest_rank('rs', 'n', 90)} THEN spent END) AS s90 "
        "FROM ranked GROUP BY wf, ver, step_id), "
        "counts AS (SELECT wf, ver, step_id, "
        "SUM(CASE WHEN type = 'rejected' THEN 1 ELSE 0 END) AS rejected, "
        "SUM(CASE WHEN type = 'awaiting_approval' THEN 1 ELSE 0 END) AS awaiting, "
        "SUM(CASE WHEN type = 'approved' THEN 1 ELSE 0 END) AS approved, "
        "SUM(CASE WHEN type = 'declined' THEN 1 ELSE 0 END) AS declined, "
        "SUM(CASE WHEN type = 'accepted' THEN 1 ELSE 0 END) AS accepted, "
        "COUNT(DISTINCT CASE WHEN type = 'accepted' THEN run_id END) AS accepted_runs "
        "FROM e WHERE step_id IS NOT NULL GROUP BY wf, ver, step_id) "
        "SELECT c.wf, c.ver, c.step_id, c.rejected, c.awaiting, c.approved, c.declined, c.accepted, "
        "c.accepted_runs, p.a50, p.a90, p.amax, p.s50, p.s90 "
        "FROM counts c LEFT JOIN pct p ON p.wf = c.wf AND p.ver = c.ver AND p.step_id = c.step_id"
    )


def _approvals(q: _Query) -> list[tuple[Any, ...]]:
    """Per step: how long each asked approval waited for a person's decision."""
    d = q.d
    return q(
        "a AS ("
        f"SELECT r.wf, r.ver, ev.run_id, ev.seq, ev.type, ev.step_id, {d['ms']('ev.at')} AS ms "
        "FROM r JOIN run_events ev ON ev.run_id = r.id "
        "WHERE ev.type IN ('awaiting_approval', 'approved', 'declined')), "
        "w AS (SELECT a.*, LEAD(ms) OVER (PARTITION BY run_id ORDER BY seq) AS next_ms FROM a), "
        "waits AS (SELECT wf, ver, step_id, next_ms - ms AS waited, "
        "ROW_NUMBER() OVER (PARTITION BY wf, ver, step_id ORDER BY next_ms - ms) AS rk, "
        "COUNT(*) OVER (PARTITION BY wf, ver, step_id) AS n "
        "FROM w WHERE type = 'awaiting_approval' AND next_ms IS NOT NULL) "
        f"SELECT wf, ver, step_id, COUNT(*), MAX(CASE WHEN {_nearest_rank('rk', 'n', 50)} THEN waited END), "
        f"MAX(CASE WHEN {_nearest_rank('rk', 'n', 90)} THEN waited END) "
        "FROM waits GROUP BY wf, ver, step_id"
    )


def _issues(q: _Query) -> list[tuple[Any, ...]]:
    """Per step: the most frequent issue messages of its rejections, counted."""
    d = q.d
    return q(
        "m AS (SELECT r.wf, r.ver, ev.step_id, j.value AS message, COUNT(*) AS n, MAX(ev.run_id) AS run "
        f"FROM r JOIN run_events ev ON ev.run_id = r.id, {d['elements']('ev.data', 'issues')} "
        f"WHERE ev.type = 'rejected' GROUP BY r.wf, r.ver, ev.step_id, j.value), "
        "t AS (SELECT m.*, ROW_NUMBER() OVER (PARTITION BY wf, ver, step_id "
        f"ORDER BY n DESC, {d['bytes']('message')}) AS rk FROM m) "
        f"SELECT wf, ver, step_id, message, n, run FROM t WHERE rk <= {TOP} ORDER BY wf, ver, step_id, rk"
    )


def _check_rows(q: _Query) -> str:
    """The check events, each with its place in its step's list: the checks of one
    submission are written together, so they are consecutive in the run's log."""
    d = q.d
    return (
        "c0 AS ("
        f"SELECT r.wf, r.ver, ev.run_id, ev.seq, ev.step_id, ev.data FROM r "
        "JOIN run_events ev ON ev.run_id = r.id WHERE ev.type = 'check'), "
        "c1 AS (SELECT c0.*, seq - ROW_NUMBER() OVER (PARTITION BY run_id ORDER BY seq) AS grp FROM c0), "
        "c AS (SELECT wf, ver, run_id, step_id, data, "
        "ROW_NUMBER() OVER (PARTITION BY run_id, grp ORDER BY seq) - 1 AS idx, "
        f"{d['text']('data', 'check')} AS kind, "
        f"CASE WHEN {d['true']('data', 'passed')} THEN 1 ELSE 0 END AS passed, "
        f"CASE WHEN {d['true']('data', 'timedOut')} THEN 1 ELSE 0 END AS timed_out, "
        f"{d['number']('data', 'durationMs')} AS ms FROM c1)"
    )


def _checks(q: _Query) -> list[tuple[Any, ...]]:
    return q(
        _check_rows(q) + ", "
        "ranked AS (SELECT c.*, "
        "ROW_NUMBER() OVER (PARTITION BY wf, ver, step_id, idx, kind ORDER BY ms) AS rk, "
        "COUNT(ms) OVER (PARTITION BY wf, ver, step_id, idx, kind) AS n FROM c) "
        "SELECT wf, ver, step_id, idx, kind, COUNT(*), SUM(passed), SUM(timed_out), "
        f"MAX(CASE WHEN ms IS NOT NULL AND {_nearest_rank('rk', 'n', 50)} THEN ms END) "
        "FROM ranked GROUP BY wf, ver, step_id, idx, kind"
    )


def _failing_lines(q: _Query) -> list[tuple[Any, ...]]:
    d = q.d
    return q(
        _check_rows(q) + ", "
        f"f AS (SELECT wf, ver, step_id, idx, kind, {d['last_line'](d['text']('data', 'output'))} AS line "
        f"FROM c WHERE passed = 0), "
        "g AS (SELECT wf, ver, step_id, idx, kind, line, COUNT(*) AS n FROM f "
        "WHERE line IS NOT NULL GROUP BY wf, ver, step_id, idx, kind, line), "
        "t AS (SELECT g.*, ROW_NUMBER() OVER (PARTITION BY wf, ver, step_id, idx, kind "
        f"ORDER BY n DESC, {d['bytes']('line')}) AS rk FROM g) "
        f"SELECT wf, ver, step_id, idx, kind, line, n FROM t WHERE rk <= {TOP} "
        "ORDER BY wf, ver, step_id, idx, rk"
    )


def _gate(q: _Query) -> list[tuple[Any, ...]]:
    d = q.d
    return q(
        f"g AS (SELECT r.wf, r.ver, ev.step_id, {d['text']('ev.data', 'decision')} AS decision "
        "FROM r JOIN run_events ev ON ev.run_id = r.id WHERE ev.type = 'gate' AND ev.step_id IS NOT NULL) "
        "SELECT wf, ver, step_id, SUM(CASE WHEN decision = 'deny' THEN 1 ELSE 0 END), "
        "SUM(CASE WHEN decision = 'block' THEN 1 ELSE 0 END) FROM g GROUP BY wf, ver, step_id"
    )


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
    checks: dict[tuple[str, str], dict[tuple[str, int, str], dict[str, Any]]] = {}

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

    for wf, ver, step_id, count in _reached(q):
        step(wf, ver, step_id)["reached"] = int(count)
    for wf, ver, step_id, status, count in _positions(q):
        here = step(wf, ver, step_id)
        if status == "abandoned":
            here["abandoned"] += int(count)
        elif status in ("active", "awaiting_approval"):
            here["active"] += int(count)
    for wf, ver, step_id, rejected, awaiting, approved, declined, accepted, runs, *pct in _steps(q):
        s = step(wf, ver, step_id)
        submissions = int(rejected) + int(awaiting) + int(accepted) - int(approved)
        s.update(
            accepted=int(runs),
            submissions=submissions,
            rejected=int(rejected),
            rejectionRate=_rate(int(rejected), submissions),
            attempts={"median": pct[0], "p90": pct[1], "max": pct[2]},
            seconds={"median": _seconds(pct[3]), "p90": _seconds(pct[4])},
        )
        s["approvals"].update(approved=int(approved), declined=int(declined))
    for wf, ver, step_id, _, p50, p90 in _approvals(q):
        step(wf, ver, step_id)["approvals"]["waitSeconds"] = {"median": _seconds(p50), "p90": _seconds(p90)}
    for wf, ver, step_id, message, count, run in _issues(q):
        step(wf, ver, step_id)["topIssues"].append(
            {"message": message[:MESSAGE_CHARS], "count": int(count), "run": run}
        )
    for wf, ver, step_id, denied, blocked in _gate(q):
        step(wf, ver, step_id)["gate"] = {"denied": int(denied), "blocked": int(blocked)}
    for wf, ver, step_id, idx, kind, count, passed, timeouts, median in _checks(q):
        checks.setdefault((wf, ver), {})[(step_id, int(idx), kind)] = {
            "step": step_id,
            "index": int(idx),
            "type": kind,
            "runs": int(count),
            "passed": int(passed),
            "passRate": _rate(int(passed), int(count)),
            "timeouts": int(timeouts),
            "durationMs": {"median": None if median is None else int(median)},
            "failingLines": [],
        }
    for wf, ver, step_id, idx, kind, line, count in _failing_lines(q):
        checks[(wf, ver)][(step_id, int(idx), kind)]["failingLines"].append(
            {"line": line[:MESSAGE_CHARS], "count": int(count)}
        )

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
