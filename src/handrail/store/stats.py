"""What the runs of a workflow tell (spec/stats.md), computed in the database.

Each figure is an aggregate query written once in the SQL SQLite and PostgreSQL
share (window functions included), with `DIALECT` snippets (stats_sql.py) for the few
things they spell differently: a time as epoch milliseconds, a field of a JSON column, the
elements of a JSON array, an ordering by bytes. Percentiles are nearest-rank and
computed in SQL too: no event is loaded into Python, only one row per workflow
version, step, check or counted message.
"""

from __future__ import annotations

from typing import Any

from handrail.store import stats_sql as sql
from handrail.store.stats_sql import GROUP, Aggregates, StatsFilter

# the statistics' API: the filter and the store's side are stats_sql.py's, named here
__all__ = ["Aggregates", "StatsFilter", "last_line", "workflow_stats"]

MESSAGE_CHARS = 500  # a listed message is cut to this many characters


def last_line(text: str | None) -> str | None:
    """SQLite's `last_line`: the last line of `text`, trailing newlines left out."""
    return None if text is None else text.rstrip("\n").rsplit("\n", 1)[-1]


def _rank(count: int, percent: int) -> int:
    """The nearest-rank percentile's rank (1-based): ceil(percent / 100 * count)."""
    return (count * percent + 99) // 100


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
    q = sql.Query(store, where)
    versions = sorted(sql.versions(q), key=lambda row: (row[0], row[6], row[1]))
    if not versions:
        return []
    order = sql.sources(store, sorted({row[7] for row in versions}))
    figures = _Figures(q)
    figures.positions()
    figures.visits()
    if any(row[8] for row in versions):  # branches: each parent once, in place of its branches
        figures.branches()
    figures.attempts()
    figures.waits()
    figures.issues()
    figures.gate()
    figures.checks()
    figures.failing_lines()
    figures.usage()
    figures.read()
    return figures.workflows(versions, order)


class _Figures:
    """The figures of the runs a query names, one query a method: each adds to the steps
    and checks found so far, and asks `percentiles` for what one statement reads last."""

    def __init__(self, q: sql.Query) -> None:
        self.q = q
        self.steps: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
        self.found_checks: dict[tuple[str, str], dict[tuple[str, int], dict[str, Any]]] = {}
        self.percentiles = sql.Percentiles(q)
        self.spent: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.found_waits: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.medians: dict[tuple[Any, ...], dict[str, Any]] = {}

    def step(self, wf: str, ver: str, step_id: str) -> dict[str, Any]:
        found = self.steps.setdefault((wf, ver), {})
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
                "usage": {"processes": 0, "inputTokens": 0, "outputTokens": 0, "costUsd": 0.0},
            }
        return found[step_id]

    def positions(self) -> None:
        for wf, ver, step_id, status, count, unseen in sql.positions(self.q):
            here = self.step(wf, ver, step_id)
            here["reached"] += _int(unseen)
            if status == "abandoned":
                here["abandoned"] += _int(count)
            elif status in ("active", "awaiting_approval"):
                here["active"] += _int(count)

    def visits(self) -> None:
        q, spent = self.q, self.spent
        for wf, ver, step_id, *n in q.store.aggregate(
            f"SELECT {GROUP}, SUM(rejected), SUM(awaiting), SUM(approved), SUM(declined), SUM(accepted), "
            "SUM(first_accepted), SUM(reached), COUNT(CASE WHEN accepted > 0 THEN spent_ms END) "
            f"FROM stats_visits{q.where} GROUP BY {GROUP}",
            q.values,
        ):
            s = self.step(wf, ver, step_id)
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
                    self.percentiles.ask(
                        spent[group], key, "stats_visits", group, only, "spent_ms", _rank(timed, percent)
                    )

    def branches(self) -> None:
        sums, parents = sql.branch_visits(self.q)
        for wf, ver, step_id, reached, first, accepted in sums:
            s = self.step(wf, ver, step_id)
            s["reached"] -= _int(reached)
            s["accepted"] += _int(accepted) - _int(first)
        for wf, ver, step_id, count in parents:
            self.step(wf, ver, step_id)["reached"] += _int(count)

    def attempts(self) -> None:
        # attempts are few distinct numbers: their counts, ranked here, give the percentiles
        q = self.q
        counted: dict[tuple[str, str, str], list[tuple[int, int]]] = {}
        for wf, ver, step_id, attempts, count in q.store.aggregate(
            f"SELECT {GROUP}, attempts, COUNT(*) FROM stats_visits WHERE accepted = 1{q.also} "
            f"GROUP BY {GROUP}, attempts",
            q.values,
        ):
            counted.setdefault((wf, ver, step_id), []).append((_int(attempts), _int(count)))
        for (wf, ver, step_id), values in counted.items():
            self.steps[(wf, ver)][step_id]["attempts"] = _ranked(sorted(values))

    def waits(self) -> None:
        q, waits = self.q, self.found_waits
        for wf, ver, step_id, count in q.store.aggregate(
            f"SELECT {GROUP}, COUNT(*) FROM stats_waits{q.where} GROUP BY {GROUP}", q.values
        ):
            waits[(wf, ver, step_id)] = {}
            for key, percent in (("median", 50), ("p90", 90)):
                rank = _rank(_int(count), percent)
                self.percentiles.ask(
                    waits[(wf, ver, step_id)],
                    key,
                    "stats_waits",
                    (wf, ver, step_id),
                    "1 = 1",
                    "waited_ms",
                    rank,
                )

    def issues(self) -> None:
        q = self.q
        issues = q.store.aggregate(sql.listed(q, "stats_issues", "message", "1 = 1"), q.values)
        for wf, ver, step_id, message, count, run, _ in sorted(issues, key=lambda row: row[-1]):
            self.step(wf, ver, step_id)["topIssues"].append(
                {"message": message[:MESSAGE_CHARS], "count": _int(count), "run": run}
            )

    def gate(self) -> None:
        q = self.q
        for wf, ver, step_id, decision, count in q.store.aggregate(
            f"SELECT {GROUP}, decision, COUNT(*) FROM stats_gate{q.where} GROUP BY {GROUP}, decision",
            q.values,
        ):
            self.step(wf, ver, step_id)["gate"]["denied" if decision == "deny" else "blocked"] += _int(count)

    def checks(self) -> None:
        q, checks, medians = self.q, self.found_checks, self.medians
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
                self.percentiles.ask(
                    check["durationMs"],
                    "median",
                    "stats_checks",
                    (wf, ver, step_id, idx, kind),
                    "duration_ms IS NOT NULL",
                    "duration_ms",
                    rank,
                )

    def failing_lines(self) -> None:
        q = self.q
        lines = q.store.aggregate(
            sql.listed(q, "stats_checks", "line", "passed = 0 AND line IS NOT NULL"), q.values
        )
        for wf, ver, step_id, idx, _kind, line, count, _run, _ in sorted(lines, key=lambda row: row[-1]):
            found = self.found_checks[(wf, ver)][(step_id, _int(idx))]["failingLines"]
            found.append({"line": line[:MESSAGE_CHARS], "count": _int(count)})

    def usage(self) -> None:
        for wf, ver, step_id, processes, tokens_in, tokens_out, cost in sql.usage(self.q):
            self.step(wf, ver, step_id)["usage"] = {
                "processes": _int(processes),
                "inputTokens": _int(tokens_in),
                "outputTokens": _int(tokens_out),
                "costUsd": round(float(cost), 6),
            }

    def read(self) -> None:
        """The percentiles asked for, read in one statement and put where they belong."""
        self.percentiles.read()
        for (wf, ver, step_id), found in self.spent.items():
            self.steps[(wf, ver)][step_id]["seconds"] = {
                "median": _seconds(found["median"]),
                "p90": _seconds(found["p90"]),
            }
        for (wf, ver, step_id), found in self.found_waits.items():
            self.step(wf, ver, step_id)["approvals"]["waitSeconds"] = {
                "median": _seconds(found["median"]),
                "p90": _seconds(found["p90"]),
            }
        for found in self.medians.values():
            found["median"] = _int(found["median"])

    def workflows(self, versions: list[tuple[Any, ...]], order: dict[str, list[str]]) -> list[dict[str, Any]]:
        """One entry per workflow, its versions in `versions`' order, each's steps and
        checks in the order its source (`order`) lists them."""
        checks = self.found_checks
        out: dict[str, dict[str, Any]] = {}
        for wf, ver, started, completed, abandoned, active, first, source_hash, _ in versions:
            listed = order.get(source_hash, [])
            found = self.steps.get((wf, ver), {})
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
