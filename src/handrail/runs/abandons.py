"""Who ended a run that was not finished (spec/runs.md, "Abandoning a run"): an agent
through `workflow_abandon` (a request with an MCP session) or a person (`handrail runs
abandon`, the dashboard), recorded apart; and a workflow's `"abandon": "person"`,
under which only a person may. While the gate watches such a run, a person's abandon
through a channel the agent shares (the command line, the dashboard without tokens)
needs their passkey, as an approval there does: the agent, the same OS user, can run
`handrail runs abandon` in its shell, but it cannot touch the authenticator."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from handrail.model.errors import SecurityError
from handrail.model.request import Request
from handrail.model.runs import RunRecord
from handrail.runs.presence import GATE_WATCHES, Presence, PresenceError, accepted, presence_needed
from handrail.runs.refusals import NotAllowedToDecide
from handrail.store.base import RunStore

# why a person's abandon needs the passkey (after GATE_WATCHES, as an approval's reason)
NEEDS_THE_PERSON = (
    '{watches}, its workflow says "abandon": "person", and the {channel} is a channel the agent '
    "shares (the same machine and user)"
)


@dataclass(frozen=True, slots=True)
class ByPerson:
    """How a person abandons: who, where (both recorded when given), their passkey's
    signed assertion, and whether the channel is one the agent shares."""

    person: str | None = None
    via: str | None = None
    presence: Presence | None = None
    shared: bool = False


BY_PERSON = ByPerson()  # the library's caller: no passkey, no shared channel


def by_whom(request: Request) -> dict[str, Any]:
    """The `abandoned` event's words for who asked: an agent's session, or a person."""
    if request.session is not None:
        return {"by": "agent", "session": request.session[:100]}
    return {"by": "person"}


def only_a_person(store: RunStore, run: RunRecord) -> bool:
    """Whether the run's pinned workflow says `"abandon": "person"`."""
    source = store.get_source(run.source_hash)
    try:
        document = json.loads(source) if source is not None else {}
    except (ValueError, RecursionError):
        return False
    return isinstance(document, dict) and document.get("abandon") == "person"


def check_allowed(store: RunStore, run: RunRecord, request: Request) -> None:
    """Refuse an agent's abandon of a run whose workflow leaves that to a person."""
    if request.session is not None and only_a_person(store, run):
        raise SecurityError(
            f'only a person can abandon run {run.id}: its workflow says "abandon": "person". '
            f"Ask the person to run `handrail runs abandon {run.id}` or to use the dashboard.",
            {"runId": run.id, "abandon": "person"},
        )


def persons(
    store: RunStore, run: RunRecord, by: ByPerson, watched: Callable[[RunRecord], bool], page: str | None
) -> dict[str, Any]:
    """What a person's abandon adds to its event: who, where and their passkey's
    assertion, checked. Without an assertion, refused (AbandonNeedsPresence) where the
    workflow leaves ending the run to a person, the channel is shared and `watched`
    (the gate watches the run or one above it) holds; anywhere else it is taken as ever."""
    data: dict[str, Any] = {}
    if by.person is not None:
        data["person"] = by.person
    if by.via is not None:
        data["via"] = by.via
    if by.presence is not None:
        events, person = store.events(run.id), by.person or ""
        try:
            data["presence"] = accepted(store, events, by.presence, (run.id, None, "abandon"), person)
        except PresenceError as exc:
            details = f"presence: {exc}"
            raise NotAllowedToDecide(
                f"Not allowed to abandon this run: {details}",
                data={"runId": run.id, "rule": "presence", "details": details},
            ) from None
    elif by.shared and only_a_person(store, run) and watched(run):
        reason = NEEDS_THE_PERSON.format(watches=GATE_WATCHES, channel=by.via or "cli")
        raise presence_needed(run.id, reason, page, abandon=True)
    return data
