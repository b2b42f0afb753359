"""The run store's schema, one migration list for every dialect.

`MIGRATIONS[n]` takes a database from schema version n to n + 1. Each is written
once, in the SQL that SQLite and PostgreSQL share, with `{placeholders}` for the
few words they spell differently (`DIALECTS`); `migrations(dialect)` renders
them. A store records each version applied in `schema_migrations` and refuses a
database whose version is newer than `len(MIGRATIONS)`.
"""

from __future__ import annotations

DIALECTS: dict[str, dict[str, str]] = {
    "sqlite": {"bytes": "BLOB"},
    "postgresql": {"bytes": "BYTEA"},
}

# Times are ISO 8601 text (UTC, milliseconds) and JSON is text in both dialects, so
# that both stores read and write the same values (and JSON keeps what PostgreSQL's
# jsonb would refuse or reshape: lone surrogates, integers past 64 bits).
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE workflow_sources (
        hash TEXT PRIMARY KEY,
        workflow_id TEXT NOT NULL,
        document {bytes} NOT NULL,
        stored_at TEXT NOT NULL
    );
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        workspace TEXT NOT NULL,
        workflow_id TEXT NOT NULL,
        workflow_version TEXT NOT NULL,
        source_hash TEXT NOT NULL REFERENCES workflow_sources(hash),
        goal TEXT NOT NULL,
        status TEXT NOT NULL,
        context TEXT NOT NULL,
        position TEXT NOT NULL,
        accepted INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        version INTEGER NOT NULL,
        events INTEGER NOT NULL
    );
    CREATE INDEX runs_by_workspace ON runs (workspace, status);
    CREATE INDEX runs_by_owner ON runs (owner, status);
    CREATE TABLE run_events (
        run_id TEXT NOT NULL REFERENCES runs(id),
        seq INTEGER NOT NULL,
        type TEXT NOT NULL,
        at TEXT NOT NULL,
        actor TEXT NOT NULL,
        step_id TEXT,
        data TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
    );
    """,
    """
    -- the hash chain over each run's events (store/chain.py): an event's hash, the run's head
    ALTER TABLE run_events ADD COLUMN hash TEXT;
    ALTER TABLE runs ADD COLUMN head TEXT
    """,
    """
    -- handrail stats: a workflow's runs in the order they started, found without a scan
    CREATE INDEX runs_by_workflow ON runs (workflow_id, created_at);
    """,
    """
    -- notifications: the outbox of webhooks (spec/notify.md), one row per event and target
    CREATE TABLE notifications (
        id TEXT PRIMARY KEY,
        run_id TEXT NOT NULL REFERENCES runs(id),
        run_version INTEGER NOT NULL,
        part INTEGER NOT NULL,
        target TEXT NOT NULL,
        event TEXT NOT NULL,
        payload TEXT NOT NULL,
        created_at TEXT NOT NULL,
        state TEXT NOT NULL,
        attempts INTEGER NOT NULL,
        next_at TEXT NOT NULL,
        claimed_until TEXT,
        last_error TEXT,
        delivered_at TEXT,
        UNIQUE (run_id, target, run_version, part)
    );
    CREATE INDEX notifications_due ON notifications (state, next_at);
    CREATE INDEX notifications_queue ON notifications (run_id, target, state, run_version, part);
    """,
    """
    -- serve --metrics: runs counted by status, and the oldest waiting approval, from an index
    CREATE INDEX runs_by_status ON runs (status, updated_at);
    """,
    """
    -- runs in a tree: a child run's parent and the parent's step that started it, its item's
    -- index when it is a branch of a parallel loop, and who holds its lease until when
    ALTER TABLE runs ADD COLUMN parent_id TEXT;
    ALTER TABLE runs ADD COLUMN parent_step TEXT;
    ALTER TABLE runs ADD COLUMN branch INTEGER;
    ALTER TABLE runs ADD COLUMN holder TEXT;
    ALTER TABLE runs ADD COLUMN lease_until TEXT;
    CREATE INDEX runs_by_parent ON runs (parent_id, branch)
    """,
    """
    -- the gate: a run's accepted steps and session bindings, found without reading its log
    CREATE INDEX run_events_accepted ON run_events (run_id, type, seq) WHERE type = 'accepted';
    CREATE INDEX run_events_binds ON run_events (run_id, seq)
        WHERE type = 'gate' AND data LIKE '%"bind":true%';
    """,
)

MIGRATIONS_TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
)


def migrations(dialect: str) -> tuple[str, ...]:
    """`MIGRATIONS` in `dialect`'s words."""
    words = DIALECTS[dialect]
    return tuple(m.format(**words) for m in MIGRATIONS)


def statements(migration: str) -> list[str]:
    """A migration's statements, one by one (none holds a `;` of its own)."""
    return [s.strip() for s in migration.split(";") if s.strip()]


def newer_than_known(current: int) -> str:
    return (
        f"has schema version {current}, newer than this handrail knows ({len(MIGRATIONS)}); upgrade handrail"
    )
