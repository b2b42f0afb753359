"""A one-time approval link, sent out of band (spec/runs.md, "Presence"): where `handrail
runs approve|decline` is refused for want of the person's passkey (the gate watches the
run, and the command line is a channel the agent shares), the command sends the person
a link through the channels the run's own notifications went to. The person decides by
opening it; the agent, which shares the terminal, never sees it.

The link holds a random token. The run's log keeps only the token's SHA-256 (an
`approval_link` event), so nothing the agent can read (the store, the terminal) lets it
decide. A link works once, for the approval as it stood when it was sent: any decision
or a new request for approval after it ends it, and so does its expiry.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from handrail.model.errors import RunNotActive
from handrail.model.request import Request
from handrail.model.runs import Event, EventType, NewEvent, RunRecord, RunStatus, RunUpdate
from handrail.runs.ledger import Ledger
from handrail.runs.refusals import NotAllowedToDecide
from handrail.store.rows import later, now

VIA = "link"  # the `via` of a decision made by opening a link
LIFETIME_S = 30 * 60.0
# after a link, these end it: the approval it was sent for is decided, or asked again
ENDS_A_LINK = (
    EventType.APPROVED,
    EventType.DECLINED,
    EventType.APPROVAL_GIVEN,
    EventType.AWAITING_APPROVAL,
    EventType.ABANDONED,
)


class LinkRefused(NotAllowedToDecide):
    """A link that decides nothing: unknown, expired, used, or for an approval no longer pending."""

    title = "This approval link decides nothing"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Link:
    """A link as its `approval_link` event keeps it."""

    run_id: str
    seq: int
    step_id: str | None
    person: str
    approve: bool
    comment: str | None
    expires: str
    sent_to: tuple[str, ...]

    @property
    def decision(self) -> Literal["approve", "decline"]:
        return "approve" if self.approve else "decline"


def _link(run_id: str, e: Event) -> Link:
    data = e.data
    sent = data.get("sentTo")
    return Link(
        run_id,
        e.seq,
        e.step_id,
        str(data.get("person")),
        data.get("decision") == "approve",
        data.get("comment") if isinstance(data.get("comment"), str) else None,
        str(data.get("expires", "")),
        tuple(str(t) for t in sent) if isinstance(sent, list) else (),
    )


def receivers(run_id: str, notifications: Sequence[Any]) -> tuple[list[str], str | None]:
    """The receivers the run's own notifications went to (the server's channels, never the
    command's environment, which the agent sets), and the dashboard their links name."""
    targets = list(dict.fromkeys(n.target for n in notifications))
    page = next(
        (n.payload.get("link") for n in reversed(notifications) if isinstance(n.payload.get("link"), str)),
        None,
    )
    suffix = f"/runs/{run_id}"
    base = page[: -len(suffix)] if isinstance(page, str) and page.endswith(suffix) else None
    return targets, base


class Links:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def issue(
        self,
        run: RunRecord,
        person: str,
        approve: bool,
        comment: str | None,
        sent_to: Sequence[str],
    ) -> tuple[str, Link]:
        """A new link for `person`'s decision on the approval `run` waits for: the token
        (to send, never to show) and the link as its event keeps it."""
        if run.status != RunStatus.AWAITING_APPROVAL:
            raise RunNotActive(data={"runId": run.id, "status": str(run.status)})
        token = secrets.token_urlsafe(32)
        step = run.current_step
        data: dict[str, Any] = {
            "person": person,
            "decision": "approve" if approve else "decline",
            "digest": digest(token),
            "expires": later(LIFETIME_S),
            "sentTo": list(sent_to),
            **({"comment": comment} if comment else {}),
        }
        event = NewEvent(EventType.APPROVAL_LINK, step["id"] if step else None, data)
        written = self.ledger.write(run, RunUpdate(), [event], person)
        return token, _link(run.id, self.ledger.events(written.id)[-1])

    def usable(self, run_id: str, token: str) -> Link:
        """The link `token` opens, if it may still decide; LinkRefused naming why not."""
        events = self.ledger.events(run_id)
        wanted = digest(token)
        found = next(
            (
                e
                for e in events
                if e.type == EventType.APPROVAL_LINK
                and hmac.compare_digest(str(e.data.get("digest", "")), wanted)
            ),
            None,
        )
        if found is None:
            raise refused(run_id, "no approval link of this run has this token")
        link = _link(run_id, found)
        after = [e for e in events if e.seq > found.seq and e.type in ENDS_A_LINK]
        if after:
            used = any(e.data.get("via") == VIA for e in after)
            why = "it was used already" if used else f"the run moved on since it was sent ({after[0].type})"
            raise refused(run_id, f"this link works once: {why}")
        if now() > link.expires:
            raise refused(run_id, f"it expired at {link.expires}")
        return link

    @staticmethod
    def refused(run_id: str, details: str) -> LinkRefused:
        return refused(run_id, details)

    def owner_request(self, run_id: str) -> Request:
        """The request of the run's owner, whose run the link's person decides on."""
        found = self.ledger.store.get(run_id)
        return Request(owner=found.owner if found is not None else None)


def refused(run_id: str, details: str) -> LinkRefused:
    return LinkRefused(
        f"This approval link decides nothing: {details}",
        data={"runId": run_id, "rule": "link", "details": details},
    )
