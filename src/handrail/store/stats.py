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
        "same": lambda col, mark: f"{col} IS {mark}",
        # the run has a visit at the step: its marks (store/summary.py) list the steps it reached
        "reached": lambda marks, step: (
            f"EXISTS (SELECT 1 FROM json_each({marks}, '$[5]') j WHERE j.key = {step})"
        ),
    },
    "postgresql": {
        "step": lambda col: f"(CAST({_plain(col)} AS json) -> 'step' ->> 'id')",
        # compared as bytes, not by the locale's rules: the code point order
        "bytes": lambda col: f'{col} COLLATE "C"',
        "same": lambda col, mark: f"{col} IS NOT DISTINCT FROM {mark}",
        "reached": lambda marks, step: f"((CAST({marks} AS json) -> 5 -> {step}) IS NOT NULL)",
    },
}


def last_line(text: str | None) -> str | None:
    """SQLite's `last_line`: the last line of `text`, trailing newlines left out."""
    return None if text is None else text.rstrip("\n").rsplit("\n", 1)[-1]


def _rank(count: int, percent: int) -> int:
    """The nearest-rank percentile's rank (1-based): ceil(percent / 100 * count)."""
    return (count * percent + 99) // 100


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
        self.also = "".join(f" AND {c}" for c in clauses)
        self.runs = (
            "r AS (SELECT id, workflow_id AS wf, workflow_version AS ver, status, position, "
            f"source_hash, created_at, stats, branch, parent_id FROM runs{self.where})"
        )

    def __call__(self, sql: str) -> list[tuple[Any, ...]]:
        joined = " " if sql.startswith("SELECT") else ", "
        return self.store.aggregate(f"WITH {self.runs}{joined}{sql}", self.values)


# A parallel loop's branch is part of its parent's run: it is no run started of its own,
# and a step its branches reached counts the parent once.
ONE = "(branch IS NULL OR parent_id IS NULL)"


def _versions(q: _Query) -> list[tuple[Any, ...]]:
    return q(
        f"SELECT wf, ver, SUM(CASE WHEN {ONE} THEN 1 ELSE 0 END), "
        f"SUM(CASE WHEN {ONE} AND status = 'completed' THEN 1 ELSE 0 END), "
        f"SUM(CASE WHEN {ONE} AND status = 'abandoned' THEN 1 ELSE 0 END), "
        f"SUM(CASE WHEN {ONE} AND status IN ('active', 'awaiting_approval') THEN 1 ELSE 0 END), "
        f"MIN(created_at), MIN(source_hash), SUM(CASE WHEN {ONE} THEN 0 ELSE 1 END) FROM r GROUP BY wf, ver"
    )


def _positions(q: _Query) -> list[tuple[Any, ...]]:
    """Where runs (not branches) stand now, per step and status (abandoned runs stand
    where they were left), and how many of them have made no submission there (reached
    all the same)."""
    d = q.d
    return q(
        f"p AS (SELECT id, wf, ver, {d['step']('position')} AS step, status, stats FROM r WHERE {ONE}) "
        f"SELECT wf, ver, step, status, COUNT(*), SUM(CASE WHEN {d['reached']('p.stats', 'p.step')} "
        "THEN 0 ELSE 1 END) FROM p WHERE step IS NOT NULL GROUP BY wf, ver, step, status"
    )


def _branch_visits(q: _Query) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """What branches add at each step, read only when some run has them: their visits'
    `reached` and `first_accepted` (counted one by one above, to be taken out), the
    parents in which the step was accepted, and the parents that reached it (a branch
    with a visit there or standing there), each parent once."""
    b = f"b AS (SELECT id, wf, ver, parent_id, {q.d['step']('position')} AS step FROM r WHERE NOT {ONE})"
    v = (
        "v AS (SELECT b.wf, b.ver, s.step_id AS step, b.parent_id AS root, s.reached, s.first_accepted "
        "FROM stats_visits s JOIN b ON b.id = s.run_id)"
    )
    sums = q(
        f"{b}, {v} SELECT wf, ver, step, SUM(reached), SUM(first_accepted), "
        "COUNT(DISTINCT CASE WHEN first_accepted = 1 THEN root END) FROM v GROUP BY wf, ver, step"
    )
    parents = q(
        f"{b}, {v}, u AS (SELECT wf, ver, step, root FROM v WHERE reached = 1 "
        "UNION SELECT wf, ver, step, parent_id FROM b WHERE step IS NOT NULL) "
        "SELECT wf, ver, step, COUNT(*) FROM u GROUP BY wf, ver, step"
    )
    return sums, parents


GROUP = "workflow_id, workflow_version, step_id"


def _listed(q: _Query, table: str, key: str, only: str) -> str:
    """The `TOP` most frequent `key`s of each step's (and check's) rows of `table`, by count
    then by code point, each row: the group, the key, its count, the greatest run id (of
    the issues: a failing line's index holds no run)."""
    checks = table == "stats_checks"
    groups = GROUP + (", idx, kind" if checks else "")
    run = "NULL" if checks else "MAX(run_id)"
    return (
        f"WITH t AS (SELECT {groups}, {key} AS k, COUNT(*) AS n, {run} AS run "
        f"FROM {table} "
        f"WHERE {only}{q.also} GROUP BY {groups}, {key}), "
        f"o AS (SELECT t.*, ROW_NUMBER() OVER (PARTITION BY {groups} ORDER BY n DESC, {q.d['bytes']('k')}) "
        f"AS rk FROM t) SELECT * FROM o WHERE rk <= {TOP}"
    )


class _Percentiles:
    """Values at given ranks, each read from an index in its order (`ORDER BY ... LIMIT 1
    OFFSET rank - 1`), all in one statement; each answer goes to the place it was asked for."""

    def __init__(self, q: _Query) -> None:
        self.q = q
        self.asked: list[str] = []
        self.values: list[Any] = []
        self.places: list[tuple[dict[str, Any], str]] = []

    def ask(
        self,
        into: dict[str, Any],
        key: str,
        table: str,
        group: Sequence[Any],
        where: str,
        col: str,
        rank: int,
    ) -> None:
        mark = self.q.mark
        same = " AND ".join(
            f"{c} = {mark}" if c != "kind" else self.q.d["same"]("kind", mark)
            for c in (*GROUP.split(", "), "idx", "kind")[: len(group)]
        )
        order = f"{col} DESC LIMIT 1" if rank == 0 else f"{col} LIMIT 1 OFFSET {rank - 1}"
        self.asked.append(
            f"(SELECT {col} FROM {table} WHERE {same} AND {where}{self.q.also} ORDER BY {order})"
        )
        self.values += [*group, *self.q.values]
        self.places.append((into, key))

    def read(self) -> None:
        if not self.asked:
            return
        (row,) = self.q.store.aggregate("SELECT " + ", ".join(self.asked), self.values)
        for (into, key), value in zip(self.places, row, strict=True):
            into[key] = value


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


def _ranked(counts: list[tuple[int, int]]) -> dict[str, int]:
    """The nearest-rank median and p90, and the maximum, of values given as ascending
    (value, how many) pairs."""
    total = sum(n for _, n in counts)
    out: dict[str, int] = {"max": counts[-1][0]}
    for key, percent in (("median", 50), ("p90", 90)):
        rank, seen = _rank(total, percent), 0
        for value, n in counts:
            seen += n
            if seen >= rank:
                out[key] = value
                break
    return {"median": out["median"], "p90": out["p90"], "max": out["max"]}


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
    percentiles = _Percentiles(q)
    spent: dict[tuple[str, str, str], dict[str, Any]] = {}
    for wf, ver, step_id, *n in q.store.aggregate(
        f"SELECT {GROUP}, SUM(rejected), SUM(awaiting), SUM(approved), SUM(declined), SUM(accepted), "
        "SUM(first_accepted), SUM(reached), COUNT(CASE WHEN accepted > 0 THEN spent_ms END) "
        f"FROM stats_visits{q.where} GROUP BY {GROUP}",
        q.values,
    ):
        s = step(wf, ver, step_id)
        rejected, awaiting, approved, declined, accepted, first, reached, timed = (_int(x) for x in n)
        submissions = rejected + awaiting + accepted - approved
        s.update(submissions=submissions, rejected=rejected, accepted=first)
        s["rejectionRate"] = _rate(rejected, submissions)
        s["approvals"].update(approved=approved, declined=declined)
        s["reached"] += reached
        group = (wf, ver, step_id)
        if timed:
            spent[group] = {}
            for key, percent in (("median", 50), ("p90", 90)):
                only = "accepted = 1 AND spent_ms IS NOT NULL"
                percentiles.ask(
                    spent[group], key, "stats_visits", group, only, "spent_ms", _rank(timed, percent)
                )
    if any(row[8] for row in versions):  # branches: each parent once, in place of its branches
        sums, parents = _branch_visits(q)
        for wf, ver, step_id, reached, first, accepted in sums:
            s = step(wf, ver, step_id)
            s["reached"] -= _int(reached)
            s["accepted"] += _int(accepted) - _int(first)
        for wf, ver, step_id, count in parents:
            step(wf, ver, step_id)["reached"] += _int(count)
    # attempts are few distinct numbers: their counts, ranked here, give the percentiles
    counted: dict[tuple[str, str, str], list[tuple[int, int]]] = {}
    for wf, ver, step_id, attempts, count in q.store.aggregate(
        f"SELECT {GROUP}, attempts, COUNT(*) FROM stats_visits WHERE accepted = 1{q.also} "
        f"GROUP BY {GROUP}, attempts",
        q.values,
    ):
        counted.setdefault((wf, ver, step_id), []).append((_int(attempts), _int(count)))
    for (wf, ver, step_id), values in counted.items():
        steps[(wf, ver)][step_id]["attempts"] = _ranked(sorted(values))
    waits: dict[tuple[str, str, str], dict[str, Any]] = {}
    for wf, ver, step_id, count in q.store.aggregate(
        f"SELECT {GROUP}, COUNT(*) FROM stats_waits{q.where} GROUP BY {GROUP}", q.values
    ):
        waits[(wf, ver, step_id)] = {}
        for key, percent in (("median", 50), ("p90", 90)):
            rank = _rank(_int(count), percent)
            percentiles.ask(
                waits[(wf, ver, step_id)], key, "stats_waits", (wf, ver, step_id), "1 = 1", "waited_ms", rank
            )
    issues = q.store.aggregate(_listed(q, "stats_issues", "message", "1 = 1"), q.values)
    for wf, ver, step_id, message, count, run, _ in sorted(issues, key=lambda row: row[-1]):
        step(wf, ver, step_id)["topIssues"].append(
            {"message": message[:MESSAGE_CHARS], "count": _int(count), "run": run}
        )
    for wf, ver, step_id, decision, count in q.store.aggregate(
        f"SELECT {GROUP}, decision, COUNT(*) FROM stats_gate{q.where} GROUP BY {GROUP}, decision", q.values
    ):
        step(wf, ver, step_id)["gate"]["denied" if decision == "deny" else "blocked"] += _int(count)
    medians: dict[tuple[Any, ...], dict[str, Any]] = {}
    for wf, ver, step_id, idx, kind, count, passed, timeouts, timed in q.store.aggregate(
        f"SELECT {GROUP}, idx, kind, COUNT(*), SUM(passed), SUM(timed_out), COUNT(duration_ms) "
        f"FROM stats_checks{q.where} GROUP BY {GROUP}, idx, kind",
        q.values,
    ):
        passed, count = _int(passed), _int(count)
        check = checks.setdefault((wf, ver), {})[(step_id, _int(idx))] = {
            "step": step_id,
            "index": _int(idx),
            "type": kind,
            "runs": count,
            "passed": passed,
            "passRate": _rate(passed, count),
            "timeouts": _int(timeouts),
            "durationMs": {"median": None},
            "failingLines": [],
        }
        if timed:
            medians[(wf, ver, step_id, idx, kind)] = check["durationMs"]
            rank = _rank(_int(timed), 50)
            percentiles.ask(
                check["durationMs"],
                "median",
                "stats_checks",
                (wf, ver, step_id, idx, kind),
                "duration_ms IS NOT NULL",
                "duration_ms",
                rank,
            )
    lines = q.store.aggregate(_listed(q, "stats_checks", "line", "passed = 0 AND line IS NOT NULL"), q.values)
    for wf, ver, step_id, idx, _kind, line, count, _run, _ in sorted(lines, key=lambda row: row[-1]):
        found = checks[(wf, ver)][(step_id, _int(idx))]["failingLines"]
        found.append({"line": line[:MESSAGE_CHARS], "count": _int(count)})
    percentiles.read()
    for (wf, ver, step_id), found in spent.items():
        steps[(wf, ver)][step_id]["seconds"] = {
            "median": _seconds(found["median"]),
            "p90": _seconds(found["p90"]),
        }
    for (wf, ver, step_id), found in waits.items():
        step(wf, ver, step_id)["approvals"]["waitSeconds"] = {
            "median": _seconds(found["median"]),
            "p90": _seconds(found["p90"]),
        }
    for found in medians.values():
        found["median"] = _int(found["median"])

    out: dict[str, dict[str, Any]] = {}
    for wf, ver, started, completed, abandoned, active, first, source_hash, _ in versions:
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
