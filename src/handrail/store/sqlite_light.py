"""The SQLite run store as a short-lived process reads it: the gate's hook, which runs
on every tool call an agent makes and must answer in a few milliseconds.

It loads only SQLite's driver and json's C parts (not the store package, dataclasses or orjson;
not even `datetime`),
opens the existing file without creating it, and does none of the full store's
start-up work: no `PRAGMA quick_check` (its time grows with the file: 0.45 s for
224 MB) and no migrations. It is used only on a database at exactly this handrail's
schema version (`current`); on any other the caller opens the full store
(store/sqlite.py), which upgrades an older one and refuses a newer one, naming it.

It reads with `RunStore`'s own calls (`list_runs`, `get`, `get_source`, `events`),
returning records of the same field names without loading store/base.py, and appends
one event to a run, taking the
write lock first (BEGIN IMMEDIATE) and checking the schema version again inside that
transaction: the run's row and its log are read and written while no other writer
can move them, so the append needs no compare-and-set retry. Damage to the file is
met by the calls that touch it (SQLite refuses the read or write, nothing is written);
damage elsewhere in the file is found by the full store's next open, not here.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from handrail import json_light
from handrail.store.gate_query import gate_events_query, gate_events_values
from handrail.store.schema import MIGRATIONS
from handrail.typing_light import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import sqlite3
    from typing import Any
else:
    # the driver itself: the `sqlite3` package around it loads `datetime` (for adapters
    # the gate never uses), a tenth of a hook's start-up
    try:
        import _sqlite3 as sqlite3
    except ImportError:
        import sqlite3

BUSY_TIMEOUT_S = 5.0  # as the full store: how long the append waits for another writer
GATE_DECISIONS = ("deny", "block")  # the gate decisions the stats count (store/summary.py)
RUN_COLUMNS = (
    "id, owner, workspace, workflow_id, source_hash, goal, status, position, accepted, parent_id, "
    "workflow_version, context, parent_step, branch, head, events, seal"  # what the seal covers
)


class LightStoreError(Exception):
    """The light store could not do a call; the message names the file."""


class OpenRun(NamedTuple):
    """What the gate reads of a run: the fields of `RunRecord` it uses, same names."""

    id: str
    owner: str
    workspace: str
    workflow_id: str
    source_hash: str
    goal: str
    status: str
    position: Mapping[str, Any]
    accepted: int
    parent_id: str | None = None


class LightEvent:
    """One event of a run's log, as `store.base.Event` names its fields; its data is
    decoded when first read, since a decision reads few of a long log's events."""

    __slots__ = ("_data", "_text", "actor", "at", "seq", "step_id", "type")

    def __init__(self, seq: int, kind: str, at: str, actor: str, step_id: str | None, text: str) -> None:
        self.seq, self.type, self.at, self.actor, self.step_id = seq, kind, at, actor, step_id
        self._text = text
        self._data: Mapping[str, Any] | None = None

    @property
    def data(self) -> Mapping[str, Any]:
        if self._data is None:
            decoded = json_light.loads(self._text)
            self._data = decoded if isinstance(decoded, dict) else {}
        return self._data


def schema_version(db: sqlite3.Connection) -> int | None:
    """The database's schema version; None when it has none yet (no table)."""
    try:
        row = db.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return None
        raise
    return int(row[0]) if row and row[0] is not None else None


def current() -> int:
    return len(MIGRATIONS)


def uri(path: str) -> str:
    """`path` as an SQLite URI opening the file read-write, never creating it."""
    escaped = path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    return f"file:{escaped}?mode=rw"


def open_light(path: str, busy_timeout: float = BUSY_TIMEOUT_S) -> LightSqlite | None:
    """The store at `path` through the light path, or None when its schema version is
    not this handrail's (or it has none): the caller opens the full store then."""
    try:
        db = sqlite3.connect(uri(path), uri=True, isolation_level=None, timeout=busy_timeout)
    except sqlite3.Error as exc:
        raise LightStoreError(f"cannot open the run database {path}: {exc}") from None
    try:
        version = schema_version(db)
    except sqlite3.Error as exc:
        db.close()
        raise LightStoreError(f"cannot read the run database {path}: {exc}") from None
    if version != current():
        db.close()
        return None
    return LightSqlite(db, path)


class LightSqlite:
    def __init__(self, db: sqlite3.Connection, path: str) -> None:
        self._db = db
        self.path = path

    def _failed(self, exc: sqlite3.Error) -> LightStoreError:
        return LightStoreError(f"the run database {self.path} refused the call: {exc}")

    def list_runs(
        self,
        *,
        statuses: Sequence[str] | None = None,
        owner: str | None = None,
        parent_id: str | None = None,
        limit: int = 100,
    ) -> list[OpenRun]:
        """As `RunStore.list_runs`: most recently updated first. `parent_id`: its children,
        found through the runs_by_parent index."""
        where: list[str] = []
        values: list[str] = []
        if statuses:
            where.append(f"status IN ({', '.join('?' for _ in statuses)})")
            values.extend(str(s) for s in statuses)
        if owner is not None:
            where.append("owner = ?")
            values.append(owner)
        if parent_id is not None:
            where.append("parent_id = ?")
            values.append(parent_id)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        query = f"SELECT {RUN_COLUMNS} FROM runs {clause} ORDER BY updated_at DESC, rowid DESC LIMIT ?"
        try:
            rows = self._db.execute(query, (*values, limit)).fetchall()
        except sqlite3.Error as exc:
            raise self._failed(exc) from None
        return [_run(row) for row in rows]

    def get(self, run_id: str) -> OpenRun | None:
        try:
            row = self._db.execute(f"SELECT {RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone()
        except sqlite3.Error as exc:
            raise self._failed(exc) from None
        return _run(row) if row is not None else None

    def get_source(self, source_hash: str) -> bytes | None:
        try:
            row = self._db.execute(
                "SELECT document FROM workflow_sources WHERE hash = ?", (source_hash,)
            ).fetchone()
        except sqlite3.Error as exc:
            raise self._failed(exc) from None
        return bytes(row[0]) if row else None

    def events(self, run_id: str) -> list[LightEvent]:
        try:
            rows = self._db.execute(
                "SELECT seq, type, at, actor, step_id, data FROM run_events WHERE run_id = ? ORDER BY seq",
                (run_id,),
            ).fetchall()
        except sqlite3.Error as exc:
            raise self._failed(exc) from None
        return [LightEvent(*row) for row in rows]

    def gate_events(self, run_id: str, recent: int) -> list[LightEvent]:
        """As `RunStore.gate_events`."""
        try:
            rows = self._db.execute(gate_events_query("?"), gate_events_values(run_id, recent)).fetchall()
        except sqlite3.Error as exc:
            raise self._failed(exc) from None
        return [LightEvent(*row[:6]) for row in sorted(rows, key=lambda row: int(row[0]))]

    def append(
        self,
        run_id: str,
        kind: str,
        step_id: str | None,
        data: Mapping[str, Any],
        actor: str,
        durable: bool = True,
    ) -> bool:
        """One event at the end of the run's log, the run's version and count moved on as
        every write moves them; False when the run is gone. `durable`: on disk before the
        call returns; else as `RunStore.update` says (safe from any process killed)."""
        from handrail.store.chain_form import event_hash, hashed_form  # lazy: a hook that writes

        db = self._db
        try:
            db.execute("PRAGMA synchronous = FULL" if durable else "PRAGMA synchronous = NORMAL")
            db.execute("BEGIN IMMEDIATE")
            try:
                if schema_version(db) != current():  # migrated meanwhile: not this path's to write
                    raise LightStoreError(
                        f"the run database {self.path} changed schema version while the gate read it"
                    )
                row = db.execute(
                    "SELECT events, head, workflow_id, workflow_version, owner, created_at, seal FROM runs "
                    "WHERE id = ?",
                    (run_id,),
                ).fetchone()
                if row is None:
                    db.execute("ROLLBACK")
                    return False
                at = now()
                seq, text = int(row[0]) + 1, encode(data)
                # chained as the full store chains: over the data as it reads back
                form = hashed_form(run_id, seq, kind, at, actor, step_id, json_light.loads(text), row[1])
                link = event_hash(form)
                from handrail.store.state_seal import reseal  # lazy: a hook that writes

                # a gate event decides none of the sealed fields: the seal moves on to the new head
                db.execute(
                    "UPDATE runs SET updated_at = ?, version = version + 1, events = events + 1, head = ?, "
                    "seal = ? WHERE id = ?",
                    (at, link, reseal(row[6], link, seq), run_id),
                )
                db.execute(
                    "INSERT INTO run_events (run_id, seq, type, at, actor, step_id, data, hash) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (run_id, seq, kind, at, actor, step_id, text, link),
                )
                decision = data.get("decision")
                if kind == "gate" and step_id is not None and decision in GATE_DECISIONS and text[0] != " ":
                    # the stats' summary of gate denials (store/summary.py), in the same transaction
                    db.execute(
                        "INSERT INTO stats_gate (run_id, workflow_id, workflow_version, owner, created_at, "
                        "seq, step_id, decision) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (run_id, *row[2:6], seq, step_id, decision),
                    )
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise self._failed(exc) from None
        return True

    def close(self) -> None:
        self._db.close()


def _run(row: Sequence[Any]) -> OpenRun:
    run_id, owner, workspace, workflow_id, source_hash, goal, status = (str(value) for value in row[:7])
    position = json_light.loads(row[7])
    position = position if isinstance(position, dict) else {}
    run = OpenRun(
        run_id, owner, workspace, workflow_id, source_hash, goal, status, position, int(row[8]), row[9]
    )
    from types import SimpleNamespace  # lazy: loaded with the first run read

    from handrail.store.state_seal import differs  # lazy: as above

    context = json_light.loads(row[11])
    whole = SimpleNamespace(
        **run._asdict(),
        workflow_version=row[10],
        context=context,
        parent_step=row[12],
        branch=row[13],
        head=row[14],
        events=row[15],
    )
    problems = differs(whole, row[16])
    if problems:  # edited past handrail: the gate cannot judge by it (spec/runs.md)
        raise LightStoreError(f"run {run_id} was changed outside handrail: " + "; ".join(problems))
    return run


def now() -> str:
    """As store/rows.py writes times: UTC, milliseconds, `Z`."""
    seconds, nanoseconds = divmod(time.time_ns(), 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{nanoseconds // 1_000_000:03d}Z"


def encode(value: Mapping[str, Any]) -> str:
    """As codec.encode_stored writes JSON: compact UTF-8, or, for text UTF-8 cannot hold
    (half of a UTF-16 pair), ASCII escapes after a space."""
    text = json_light.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return " " + json_light.dumps(value, ensure_ascii=True, separators=(",", ":"))
    return text
