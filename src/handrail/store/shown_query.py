"""The one query of what a person or an agent is shown of a run's log (`handrail runs
show`, workflow_resume's recap), shared by every store, so it imports nothing.

Both parts are found through an index, whatever the length of the log: the run's last
`recent` events (the primary key) and its accepted steps (the partial index of
store/schema.py). A long gated run records every tool call, so reading its whole log
to show a recap would cost in proportion to those calls. The rows come in no order:
the caller sorts them by `seq`.
"""

from __future__ import annotations

_COLUMNS = "seq, type, at, actor, step_id, data, hash"
_QUERY = (
    f"SELECT {_COLUMNS} FROM run_events "
    "WHERE run_id = {mark} AND seq > (SELECT events FROM runs WHERE id = {mark}) - {mark} "
    f"UNION SELECT {_COLUMNS} FROM run_events WHERE run_id = {{mark}} AND type = 'accepted'"
)


def shown_events_query(mark: str) -> str:
    """The query with `mark` as its placeholder (`?` or psycopg's `%s`)."""
    return _QUERY.format(mark=mark)


def shown_events_values(run_id: str, recent: int) -> tuple[str | int, ...]:
    return (run_id, run_id, recent, run_id)
