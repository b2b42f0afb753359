"""The run store's schema, one migration list for every dialect.

`MIGRATIONS[n]` takes a database from schema version n to n + 1. Each is written
once, in the SQL that SQLite and PostgreSQL share, with `{placeholders}` for the
few words they spell differently (`DIALECTS`); `migrations(dialect)` renders
them. A store records each version applied in `schema_migrations` and refuses a
database whose version is newer than `len(MIGRATIONS)`.
"""

from __future__ import annotations


def _ms_sqlite(at: str) -> str:
    return f"CAST(ROUND((julianday({at}) - 2440587.5) * 86400000.0) AS INTEGER)"


def _ms_postgres(at: str) -> str:
    return f"CAST(EXTRACT(EPOCH FROM CAST({at} AS timestamptz)) * 1000 AS bigint)"


# an event's data in the plain JSON form, else NULL (the escaped form is not read: spec/stats.md)
_PLAIN = "(CASE WHEN substr(ev.data, 1, 1) = ' ' THEN NULL ELSE ev.data END)"
_JSON = f"CAST({_PLAIN} AS json)"

DIALECTS: dict[str, dict[str, str]] = {
    "sqlite": {
        "bytes": "BLOB",
        "clustered": " WITHOUT ROWID",
        "ms_at": _ms_sqlite("at"),
        "ms_since": _ms_sqlite("since_at"),
        "ms_asked": _ms_sqlite("asked_at"),
        "kind": f"json_extract({_PLAIN}, '$.check')",
        "passed": f"(json_type({_PLAIN}, '$.passed') = 'true')",
        "timed_out": f"(json_type({_PLAIN}, '$.timedOut') = 'true')",
        "duration": f"json_extract({_PLAIN}, '$.durationMs')",
        "last_line": f"last_line(json_extract({_PLAIN}, '$.output'))",
        "decision": f"json_extract({_PLAIN}, '$.decision')",
        "issues": f"json_each({_PLAIN}, '$.issues') AS j",
        "issue_n": "j.key",
        "steps_json": "json_group_object(step_id, a)",
        "marks_json": "json_array(since_seq, since_ms, asked_ms, check_seq, check_idx, json(steps))",
    },
    "postgresql": {
        "bytes": "BYTEA",
        "clustered": "",
        "ms_at": _ms_postgres("at"),
        "ms_since": _ms_postgres("since_at"),
        "ms_asked": _ms_postgres("asked_at"),
        "kind": f"({_JSON} ->> 'check')",
        "passed": f"(({_JSON} ->> 'passed') = 'true')",
        "timed_out": f"(({_JSON} ->> 'timedOut') = 'true')",
        "duration": f"CAST({_JSON} ->> 'durationMs' AS double precision)",
        "last_line": f"regexp_replace(rtrim({_JSON} ->> 'output', E'\\n'), '^.*\\n', '')",
        "decision": f"({_JSON} ->> 'decision')",
        "issues": f"json_array_elements_text({_JSON} -> 'issues') WITH ORDINALITY AS j(value, n)",
        "issue_n": "j.n - 1",
        "steps_json": "CAST(json_object_agg(step_id, a) AS text)",
        "marks_json": (
            "CAST(json_build_array(since_seq, since_ms, asked_ms, check_seq, check_idx, "
            "CAST(steps AS json)) AS text)"
        ),
    },
}

# What the stats tables of the last migration hold, derived from the events (the same
# rows store/summary.py writes with each event); also used where event rows are written
# straight into the tables. Each statement reads the events of every run.
_KEYS = "run_id, workflow_id, workflow_version, owner, created_at"
_RUN = "r.id AS run_id, r.workflow_id, r.workflow_version, r.owner, r.created_at"
_STEP_EVENTS = "('started', 'rejected', 'awaiting_approval', 'approved', 'declined', 'accepted')"
_WINDOW = (
    f"e AS (SELECT {_RUN}, ev.seq, ev.type, ev.step_id, ev.at FROM runs r "
    f"JOIN run_events ev ON ev.run_id = r.id WHERE ev.type IN {_STEP_EVENTS}), "
    "w AS (SELECT e.*, COALESCE(MAX(CASE WHEN type IN ('started', 'accepted') THEN seq END) OVER p, 0) "
    "AS since_seq, MAX(CASE WHEN type IN ('started', 'accepted') THEN at END) OVER p AS since_at, "
    "MAX(CASE WHEN type = 'awaiting_approval' THEN at END) OVER p AS asked_at FROM e "
    "WINDOW p AS (PARTITION BY run_id ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING))"
)


def _count(kind: str) -> str:
    return f"SUM(CASE WHEN type = '{kind}' THEN 1 ELSE 0 END)"


STATS_FILL = f"""
    WITH {_WINDOW},
    sv AS (SELECT {_KEYS}, since_seq, step_id, {_count("rejected")} AS rejected,
        {_count("awaiting_approval")} AS awaiting, {_count("approved")} AS approved,
        {_count("declined")} AS declined, {_count("accepted")} AS accepted,
        MAX(CASE WHEN type = 'accepted' THEN {{ms_at}} - {{ms_since}} END) AS spent_ms
        FROM w WHERE step_id IS NOT NULL GROUP BY {_KEYS}, since_seq, step_id)
    INSERT INTO stats_visits ({_KEYS}, since_seq, step_id, rejected, awaiting, approved, declined, accepted,
        spent_ms, attempts, reached, first_accepted)
    SELECT sv.*, rejected + declined + 1,
        CASE WHEN ROW_NUMBER() OVER (PARTITION BY run_id, step_id ORDER BY since_seq) = 1 THEN 1 ELSE 0 END,
        CASE WHEN accepted > 0 AND ROW_NUMBER() OVER (PARTITION BY run_id, step_id,
        CASE WHEN accepted > 0 THEN 1 ELSE 0 END ORDER BY since_seq) = 1 THEN 1 ELSE 0 END FROM sv;
    WITH {_WINDOW}
    INSERT INTO stats_waits ({_KEYS}, seq, step_id, waited_ms)
    SELECT {_KEYS}, seq, step_id, {{ms_at}} - {{ms_asked}} FROM w
    WHERE type IN ('approved', 'declined') AND asked_at IS NOT NULL AND step_id IS NOT NULL;
    WITH x AS (SELECT {_RUN}, ev.seq, ev.step_id, {{kind}} AS kind,
        CASE WHEN {{passed}} THEN 1 ELSE 0 END AS passed,
        CASE WHEN {{timed_out}} THEN 1 ELSE 0 END AS timed_out,
        {{duration}} AS duration_ms, CASE WHEN {{passed}} THEN NULL ELSE {{last_line}} END AS line
        FROM runs r JOIN run_events ev ON ev.run_id = r.id WHERE ev.type = 'check'),
    x1 AS (SELECT x.*, seq - ROW_NUMBER() OVER (PARTITION BY run_id ORDER BY seq) AS grp FROM x)
    INSERT INTO stats_checks ({_KEYS}, seq, step_id, idx, kind, passed, timed_out, duration_ms, line)
    SELECT {_KEYS}, seq, step_id, ROW_NUMBER() OVER (PARTITION BY run_id, grp ORDER BY seq) - 1, kind, passed,
        timed_out, duration_ms, line FROM x1 WHERE step_id IS NOT NULL;
    INSERT INTO stats_issues ({_KEYS}, seq, n, step_id, message)
    SELECT {_RUN}, ev.seq, {{issue_n}}, ev.step_id, j.value
    FROM runs r JOIN run_events ev ON ev.run_id = r.id, {{issues}}
    WHERE ev.type = 'rejected' AND ev.step_id IS NOT NULL AND j.value IS NOT NULL;
    INSERT INTO stats_gate ({_KEYS}, seq, step_id, decision)
    SELECT {_RUN}, ev.seq, ev.step_id, {{decision}} FROM runs r JOIN run_events ev ON ev.run_id = r.id
    WHERE ev.type = 'gate' AND ev.step_id IS NOT NULL AND {{decision}} IN ('deny', 'block');
    CREATE TEMPORARY TABLE stats_marks (run_id TEXT PRIMARY KEY, marks TEXT);
    WITH m AS (SELECT r.id AS run_id,
        (SELECT MAX(seq) FROM run_events ev WHERE ev.run_id = r.id AND ev.type IN ('started', 'accepted'))
        AS s,
        (SELECT MAX(at) FROM run_events ev WHERE ev.run_id = r.id AND ev.type IN ('started', 'accepted'))
        AS since_at,
        (SELECT MAX(at) FROM run_events ev WHERE ev.run_id = r.id AND ev.type = 'awaiting_approval')
        AS asked_at,
        (SELECT MAX(seq) FROM stats_checks c WHERE c.run_id = r.id) AS check_seq FROM runs r),
    st AS (SELECT run_id, step_id, MAX(first_accepted) AS a FROM stats_visits GROUP BY run_id, step_id),
    sj AS (SELECT run_id, {{steps_json}} AS steps FROM st GROUP BY run_id)
    INSERT INTO stats_marks (run_id, marks)
    SELECT m.run_id, {{marks_json}} FROM (SELECT m.run_id, COALESCE(s, 0) AS since_seq,
        {{ms_since}} AS since_ms, {{ms_asked}} AS asked_ms, COALESCE(check_seq, 0) AS check_seq,
        COALESCE((SELECT idx FROM stats_checks c WHERE c.run_id = m.run_id AND c.seq = m.check_seq), 0)
        AS check_idx, COALESCE(sj.steps, '{{{{}}}}') AS steps
        FROM m LEFT JOIN sj ON sj.run_id = m.run_id) AS m;
    UPDATE runs SET stats = (SELECT marks FROM stats_marks WHERE stats_marks.run_id = runs.id);
    DROP TABLE stats_marks;
"""

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
    """
    -- handrail stats: summaries kept as events are written (store/summary.py), filled here from the log
    -- per run, what the next event's summary depends on (store/summary.py `Marks`)
    ALTER TABLE runs ADD COLUMN stats TEXT;
    CREATE TABLE stats_visits (
        workflow_id TEXT NOT NULL,
        workflow_version TEXT NOT NULL,
        step_id TEXT NOT NULL,
        run_id TEXT NOT NULL REFERENCES runs(id),
        since_seq INTEGER NOT NULL,
        owner TEXT NOT NULL,
        created_at TEXT NOT NULL,
        rejected INTEGER NOT NULL,
        awaiting INTEGER NOT NULL,
        approved INTEGER NOT NULL,
        declined INTEGER NOT NULL,
        accepted INTEGER NOT NULL,
        attempts INTEGER NOT NULL,
        spent_ms BIGINT,
        reached INTEGER NOT NULL,
        first_accepted INTEGER NOT NULL,
        PRIMARY KEY (workflow_id, workflow_version, step_id, run_id, since_seq)
    ){clustered};
    CREATE INDEX stats_visits_attempts ON stats_visits
        (workflow_id, workflow_version, step_id, accepted, attempts, created_at, owner);
    CREATE INDEX stats_visits_spent ON stats_visits
        (workflow_id, workflow_version, step_id, accepted, spent_ms, created_at, owner);
    CREATE TABLE stats_waits (
        workflow_id TEXT NOT NULL,
        workflow_version TEXT NOT NULL,
        step_id TEXT NOT NULL,
        waited_ms BIGINT NOT NULL,
        run_id TEXT NOT NULL REFERENCES runs(id),
        seq INTEGER NOT NULL,
        owner TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (workflow_id, workflow_version, step_id, waited_ms, run_id, seq)
    ){clustered};
    CREATE TABLE stats_checks (
        run_id TEXT NOT NULL REFERENCES runs(id),
        workflow_id TEXT NOT NULL,
        workflow_version TEXT NOT NULL,
        owner TEXT NOT NULL,
        created_at TEXT NOT NULL,
        seq INTEGER NOT NULL,
        step_id TEXT NOT NULL,
        idx INTEGER NOT NULL,
        kind TEXT,
        passed INTEGER NOT NULL,
        timed_out INTEGER NOT NULL,
        duration_ms DOUBLE PRECISION,
        line TEXT,
        PRIMARY KEY (run_id, seq)
    );
    CREATE INDEX stats_checks_runs ON stats_checks
        (workflow_id, workflow_version, step_id, idx, kind, duration_ms, passed, timed_out,
        created_at, owner);
    CREATE INDEX stats_checks_lines ON stats_checks
        (workflow_id, workflow_version, step_id, idx, kind, line, created_at, owner) WHERE passed = 0;
    CREATE TABLE stats_issues (
        workflow_id TEXT NOT NULL,
        workflow_version TEXT NOT NULL,
        step_id TEXT NOT NULL,
        message TEXT NOT NULL,
        run_id TEXT NOT NULL REFERENCES runs(id),
        seq INTEGER NOT NULL,
        n INTEGER NOT NULL,
        owner TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (workflow_id, workflow_version, step_id, message, run_id, seq, n)
    ){clustered};
    CREATE TABLE stats_gate (
        run_id TEXT NOT NULL REFERENCES runs(id),
        workflow_id TEXT NOT NULL,
        workflow_version TEXT NOT NULL,
        owner TEXT NOT NULL,
        created_at TEXT NOT NULL,
        seq INTEGER NOT NULL,
        step_id TEXT NOT NULL,
        decision TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
    );
    """
    + STATS_FILL,
    """
    -- workflow_claim: open branches nobody holds, in item order, and held ones by their lease's
    -- end, so a claim reads the branch it takes instead of walking past the held ones
    CREATE INDEX runs_unheld_branches ON runs (parent_id, branch)
        WHERE branch IS NOT NULL AND status = 'active' AND holder IS NULL;
    CREATE INDEX runs_held_branches ON runs (parent_id, lease_until)
        WHERE branch IS NOT NULL AND status = 'active' AND holder IS NOT NULL
    """,
    """
    -- a person's passkeys (WebAuthn public keys): what an approval's signature is checked against
    CREATE TABLE passkeys (
        credential_id TEXT PRIMARY KEY,
        person TEXT NOT NULL,
        public_key TEXT NOT NULL,
        sign_count INTEGER NOT NULL,
        rp_id TEXT NOT NULL,
        name TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE INDEX passkeys_person ON passkeys (person)
    """,
    """
    -- the row's state bound to its chain head (store/state_seal.py), the runs already kept
    -- are sealed as they stand when this is applied (chain.seal_backfill)
    ALTER TABLE runs ADD COLUMN seal TEXT
    """,
    """
    -- the current step's gate digest (runs/gate_digest.py), written by the run layer when
    -- the step changes and covered by the seal: a hook reads the row and decides
    ALTER TABLE runs ADD COLUMN gate TEXT
    """,
    """
    -- the dashboard's sessions (store/sessions.py), shared by every server on the store
    CREATE TABLE dashboard_sessions (
        id_hash TEXT PRIMARY KEY,
        person TEXT NOT NULL,
        csrf TEXT NOT NULL,
        expires DOUBLE PRECISION NOT NULL
    );
    CREATE INDEX dashboard_sessions_person ON dashboard_sessions (person, expires)
    """,
    """
    -- what driven agents spent (`usage` events, docs/drive.md): handrail stats and /metrics
    -- sum them without reading the rest of the log
    CREATE INDEX run_events_usage ON run_events (run_id, seq) WHERE type = 'usage'
    """,
    """
    -- the passkey challenges the dashboard handed out (store/challenges.py), shared by every
    -- server on the store so that the answer may reach any of them, each taken once
    CREATE TABLE passkey_challenges (
        key_hash TEXT PRIMARY KEY,
        person TEXT NOT NULL,
        body TEXT NOT NULL,
        expires DOUBLE PRECISION NOT NULL
    );
    CREATE INDEX passkey_challenges_person ON passkey_challenges (person, expires)
    """,
)
SEAL_MIGRATION = 11  # the version that adds the seal (the 11th above)

STATS_TABLES = ("stats_visits", "stats_waits", "stats_checks", "stats_issues", "stats_gate")

MIGRATIONS_TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
)


def migrations(dialect: str) -> tuple[str, ...]:
    """`MIGRATIONS` in `dialect`'s words."""
    words = DIALECTS[dialect]
    return tuple(m.format(**words) for m in MIGRATIONS)


def stats_fill(dialect: str) -> str:
    """`STATS_FILL` in `dialect`'s words: the stats tables' rows derived from the events."""
    return STATS_FILL.format(**DIALECTS[dialect])


def statements(migration: str) -> list[str]:
    """A migration's statements, one by one (none holds a `;` of its own)."""
    return [s.strip() for s in migration.split(";") if s.strip()]


def newer_than_known(current: int) -> str:
    return (
        f"has schema version {current}, newer than this handrail knows ({len(MIGRATIONS)}); upgrade handrail"
    )
