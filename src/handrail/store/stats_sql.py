"""The SQL of the statistics (store/stats.py): the runs a filter names, and the
aggregate queries over them and the summary tables, in the SQL SQLite and PostgreSQL
share, with `DIALECT` snippets where they spell a thing differently."""

import json
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

TOP = 5  # messages and failing lines listed per step or check


class Aggregates(Protocol):
    """What a store offers the statistics: its dialect and one read-only query."""

    dialect: str

    def aggregate(self, sql: str, values: Sequence[Any]) -> list[tuple[Any, ...]]: ...


class StatsFilter(NamedTuple):  # a hook's write loads this module: no dataclasses
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
        "number": lambda col, key: f"json_extract({_plain(col)}, '$.{key}')",
        "reached": lambda marks, step: (
            f"EXISTS (SELECT 1 FROM json_each({marks}, '$[5]') j WHERE j.key = {step})"
        ),
    },
    "postgresql": {
        "step": lambda col: f"(CAST({_plain(col)} AS json) -> 'step' ->> 'id')",
        # compared as bytes, not by the locale's rules: the code point order
        "bytes": lambda col: f'{col} COLLATE "C"',
        "same": lambda col, mark: f"{col} IS NOT DISTINCT FROM {mark}",
        "number": lambda col, key: f"CAST(CAST({_plain(col)} AS json) ->> '{key}' AS double precision)",
        "reached": lambda marks, step: f"((CAST({marks} AS json) -> 5 -> {step}) IS NOT NULL)",
    },
}


class Query:
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


def versions(q: Query) -> list[tuple[Any, ...]]:
    return q(
        f"SELECT wf, ver, SUM(CASE WHEN {ONE} THEN 1 ELSE 0 END), "
        f"SUM(CASE WHEN {ONE} AND status = 'completed' THEN 1 ELSE 0 END), "
        f"SUM(CASE WHEN {ONE} AND status = 'abandoned' THEN 1 ELSE 0 END), "
        f"SUM(CASE WHEN {ONE} AND status IN ('active', 'awaiting_approval') THEN 1 ELSE 0 END), "
        f"MIN(created_at), MIN(source_hash), SUM(CASE WHEN {ONE} THEN 0 ELSE 1 END) FROM r GROUP BY wf, ver"
    )


def positions(q: Query) -> list[tuple[Any, ...]]:
    """Where runs (not branches) stand now, per step and status (abandoned runs stand
    where they were left), and how many of them have made no submission there (reached
    all the same)."""
    d = q.d
    return q(
        f"p AS (SELECT id, wf, ver, {d['step']('position')} AS step, status, stats FROM r WHERE {ONE}) "
        f"SELECT wf, ver, step, status, COUNT(*), SUM(CASE WHEN {d['reached']('p.stats', 'p.step')} "
        "THEN 0 ELSE 1 END) FROM p WHERE step IS NOT NULL GROUP BY wf, ver, step, status"
    )


def branch_visits(q: Query) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
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


def usage(q: Query) -> list[tuple[Any, ...]]:
    """What the agents `handrail drive` started spent at each step: its `usage` events,
    one per agent process, summed. No summary table holds them: they are read through
    the index of `usage` events alone (schema.py), and only a driven run has any."""
    d = q.d
    number = {
        k: f"COALESCE({d['number']('ev.data', k)}, 0)" for k in ("inputTokens", "outputTokens", "costUsd")
    }
    return q(
        f"SELECT r.wf, r.ver, ev.step_id, COUNT(*), SUM({number['inputTokens']}), "
        f"SUM({number['outputTokens']}), SUM({number['costUsd']}) "
        "FROM r JOIN run_events ev ON ev.run_id = r.id WHERE ev.type = 'usage' AND ev.step_id IS NOT NULL "
        "GROUP BY r.wf, r.ver, ev.step_id"
    )


GROUP = "workflow_id, workflow_version, step_id"


def listed(q: Query, table: str, key: str, only: str) -> str:
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


class Percentiles:
    """Values at given ranks, each read from an index in its order (`ORDER BY ... LIMIT 1
    OFFSET rank - 1`), all in one statement; each answer goes to the place it was asked for."""

    def __init__(self, q: Query) -> None:
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


def sources(store: Aggregates, hashes: Sequence[str]) -> dict[str, list[str]]:
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
            out[source_hash] = step_ids(json.loads(bytes(document)).get("steps"))
        except (ValueError, AttributeError):
            out[source_hash] = []
    return out


def step_ids(steps: Any) -> list[str]:
    ids: list[str] = []
    for step in steps if isinstance(steps, list) else []:
        if isinstance(step, dict):
            if isinstance(step.get("body"), list):
                ids += step_ids(step["body"])  # a loop's body runs before the loop ends
            if isinstance(step.get("id"), str):
                ids.append(step["id"])
    return ids
