"""An approval that needs the person: when a passkey's signature is asked for, the
challenge it signs, and checking a signed assertion (spec/runs.md, "Presence").

The challenge is the SHA-256 of the run, the step, the decision (approve, decline, or
abandon, which a workflow's `"abandon": "person"` may ask a passkey for: runs/abandons.py),
the run's chain head at that moment and a nonce of the server's: the signature binds the decision to
everything the log held before it. The agent runs as the same OS user, with the same
files, tokens and shell, but it cannot touch the authenticator, so it cannot sign.

WebAuthn's own checks (the signature, the relying party, the flags) are the `webauthn`
library's (py_webauthn), loaded only when a passkey is used.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from handrail.model.runs import Event, EventType
from handrail.runs.refusals import NotAllowedToDecide
from handrail.store.chain import Break
from handrail.store.chain_form import event_hash, hashed_form
from handrail.store.passkeys import Passkey

if TYPE_CHECKING:
    from handrail.store.base import RunStore

PASSKEY = "passkey"
# the events a passkey may sign: a person's decisions, and a person's abandon
DECISIONS = (EventType.APPROVED, EventType.DECLINED, EventType.APPROVAL_GIVEN, EventType.ABANDONED)
Decision = Literal["approve", "decline", "abandon"]
# the reason a shared channel's decision needs the person: the one a link may do instead of
# the passkey (runs/links.py)
GATE_WATCHES = "the gate watches this run"
# a run's tree is followed this far up for the gate's events (as the gate follows it down)
TREE_DEPTH = 8


class PresenceError(Exception):
    """An assertion that does not hold, in words."""


class PresenceNeeded(NotAllowedToDecide):
    """This decision needs the person's passkey, and none came with it: nothing is
    decided. `data.page`: the run's page, where the person can sign it."""

    title = "This approval needs the person's passkey"


class AbandonNeedsPresence(PresenceNeeded):
    """Abandoning this run needs the person's passkey, and none came with it: the run
    goes on. `data.page`: the run's page, where the person can sign it."""

    title = "Abandoning this run needs the person's passkey"


def presence_needed(run_id: str, reason: str, page: str | None, abandon: bool = False) -> PresenceNeeded:
    where = f" on the run's page {page}" if page else " on the run's page of the dashboard"
    what = "abandon it" if abandon else "approve or decline it"
    details = f"presence: {reason}; {what} with your passkey{where}"
    data: dict[str, Any] = {"runId": run_id, "rule": "presence", "details": details}
    if page:
        data["page"] = page
    if abandon:
        return AbandonNeedsPresence(f"Not allowed to abandon this run: {details}", data=data)
    return PresenceNeeded(f"Not allowed to decide this approval: {details}", data=data)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def new_nonce() -> str:
    return secrets.token_urlsafe(24)


def challenge(run_id: str, step_id: str | None, decision: Decision, head: str | None, nonce: str) -> bytes:
    """What the passkey signs for this decision on this run at this head (`step_id`: the
    step decided on; None for an abandon, which ends the run whatever its step)."""
    form = {
        "runId": run_id,
        "stepId": step_id,
        "decision": decision,
        "head": head,
        "nonce": nonce,
    }
    return hashlib.sha256(json.dumps(form, sort_keys=True, separators=(",", ":")).encode()).digest()


@dataclass(frozen=True, slots=True)
class Presence:
    """A signed assertion brought for a decision: the head and nonce its challenge was
    made of, the relying party and origin it was made on, and WebAuthn's credential
    (id, rawId, type, response: authenticatorData, clientDataJSON, signature, userHandle)."""

    head: str | None
    nonce: str
    rp_id: str
    origin: str
    credential: Mapping[str, Any]

    def recorded(self) -> dict[str, Any]:
        """As the decision's event keeps it."""
        return {
            "method": PASSKEY,
            "head": self.head,
            "nonce": self.nonce,
            "rpId": self.rp_id,
            "credential": dict(self.credential),
        }

    @staticmethod
    def of_record(data: Mapping[str, Any]) -> Presence:
        credential = data.get("credential")
        if not isinstance(credential, Mapping):
            raise PresenceError("its assertion holds no credential")
        origin = _client_origin(credential)
        return Presence(
            head=data.get("head") if isinstance(data.get("head"), str) else None,
            nonce=str(data.get("nonce", "")),
            rp_id=str(data.get("rpId", "")),
            origin=origin,
            credential=credential,
        )

    @property
    def credential_id(self) -> str:
        return str(self.credential.get("id", ""))


def _client_origin(credential: Mapping[str, Any]) -> str:
    response = credential.get("response")
    text = response.get("clientDataJSON") if isinstance(response, Mapping) else None
    try:
        client = json.loads(unb64url(str(text)))
    except (ValueError, TypeError):
        raise PresenceError("its clientDataJSON is not base64url JSON") from None
    origin = client.get("origin") if isinstance(client, dict) else None
    if not isinstance(origin, str):
        raise PresenceError("its clientDataJSON names no origin")
    return origin


def check(
    presence: Presence,
    run_id: str,
    step_id: str | None,
    decision: Decision,
    keys: Sequence[Passkey],
    person: str,
) -> int:
    """Check `presence` for this decision against `person`'s registered `keys`; the
    assertion's signature counter. Raises PresenceError naming what does not hold."""
    key = next((k for k in keys if k.credential_id == presence.credential_id), None)
    if key is None:
        raise PresenceError(f"its passkey `{presence.credential_id[:24]}` is not one {person} registered")
    if key.person != person:
        raise PresenceError(f"its passkey is {key.person}'s, not {person}'s")
    if key.rp_id != presence.rp_id:
        raise PresenceError(f"its passkey was made for `{key.rp_id}`, the assertion for `{presence.rp_id}`")
    if urlsplit(presence.origin).hostname != presence.rp_id:
        raise PresenceError(f"it was made on `{presence.origin}`, not on `{presence.rp_id}`")
    expected = challenge(run_id, step_id, decision, presence.head, presence.nonce)
    from webauthn import verify_authentication_response  # lazy: only when a passkey is used
    from webauthn.helpers.exceptions import InvalidAuthenticationResponse  # lazy: as above

    try:
        verified = verify_authentication_response(
            credential=dict(presence.credential),
            expected_challenge=expected,
            expected_rp_id=presence.rp_id,
            expected_origin=presence.origin,
            credential_public_key=unb64url(key.public_key),
            credential_current_sign_count=0,
            require_user_verification=True,
        )
    except (InvalidAuthenticationResponse, ValueError, KeyError, TypeError) as exc:
        raise PresenceError(f"its signature does not hold: {exc}") from None
    return int(verified.new_sign_count)


def accepted(
    store: RunStore,
    events: Sequence[Event],
    presence: Presence,
    signed: tuple[str, str | None, Decision],
    person: str,
) -> dict[str, Any]:
    """Check `presence` for `person`'s decision `signed` (run, step, decision) on the run
    whose log is `events`, as the store holds it now; the assertion as the decision's event
    keeps it, the key's counter moved on. Raises PresenceError, its words to follow
    "presence: "."""
    if presence.head not in signable_heads(events):
        raise PresenceError("the run changed since the passkey signed; sign again")
    run_id, step_id, decision = signed
    try:
        count = check(presence, run_id, step_id, decision, store.passkeys(person), person)
    except PresenceError as exc:
        raise PresenceError(f"the passkey's assertion does not hold: {exc}") from None
    store.passkey_used(presence.credential_id, count)
    return presence.recorded()


def decision_of(e: Event) -> tuple[str | None, Decision]:
    """The step and decision a signed event's challenge was made of."""
    if e.type == EventType.ABANDONED:
        return None, "abandon"
    return str(e.step_id), "decline" if e.type == EventType.DECLINED else "approve"


def gate_watches(events: Sequence[Event]) -> bool:
    """Whether the gate has seen the run: a session bound to it, or a decision recorded.
    From then on the agent works beside it with the person's own user and files."""
    return any(e.type == EventType.GATE for e in events)


@dataclass(frozen=True, slots=True)
class Unsigned:
    """A decision's signature that does not hold: the event and why, in words."""

    seq: int
    problem: str

    def as_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "problem": self.problem}


def signatures(run_id: str, events: Sequence[Event], keys: Sequence[Passkey]) -> tuple[int, Unsigned | None]:
    """Check every passkey-signed decision of a run against the registered `keys`, each
    signed head against the chain recomputed from the events' content (never their
    stored hashes): a log rewritten before a signed decision fails there. Returns how
    many signatures hold and the first that does not, if any."""
    heads: list[str | None] = [None]  # the heads a decision here may have signed
    held = 0
    for e in events:
        recorded = e.data.get("presence") if e.type in DECISIONS else None
        if isinstance(recorded, Mapping):
            problem = _one(run_id, e, heads, recorded, keys)
            if problem is not None:
                return held, Unsigned(e.seq, f"event {e.seq} ({e.type}) by {e.data.get('person')}: {problem}")
            held += 1
        prev = event_hash(hashed_form(run_id, e.seq, e.type, e.at, e.actor, e.step_id, e.data, heads[-1]))
        heads = [*heads, prev] if e.type == EventType.GATE else [prev]
    return held, None


def signable_heads(events: Sequence[Event]) -> list[str | None]:
    """The heads a decision written after `events` may have signed, from their stored
    hashes: the last one, and those before it while only the gate wrote since (an agent's
    tool call recorded while the person was signing does not void the signature)."""
    heads: list[str | None] = [events[-1].hash if events else None]
    for e in reversed(events):
        if e.type != EventType.GATE:
            break
        heads.append(None if e.seq == 1 else next((p.hash for p in events if p.seq == e.seq - 1), None))
    return heads


def _one(
    run_id: str, e: Event, heads: Sequence[str | None], recorded: Mapping[str, Any], keys: Sequence[Passkey]
) -> str | None:
    try:
        presence = Presence.of_record(recorded)
        if presence.head not in heads:
            return (
                f"its passkey signed the chain head {str(presence.head)[:16]}..., but the events before "
                f"it hash to {str(heads[-1])[:16]}...: the log before it was rewritten"
            )
        step_id, decision = decision_of(e)
        check(presence, run_id, step_id, decision, keys, str(e.data.get("person")))
    except PresenceError as exc:
        return str(exc)
    return None


def signature_break(store: RunStore, run_id: str, events: Sequence[Event]) -> Break | None:
    """`runs verify`'s check of a run's passkey signatures against the keys registered in
    `store` (beside the chain's own check, `store/chain.check_run`)."""
    if not any(isinstance(e.data.get("presence"), Mapping) for e in events if e.type in DECISIONS):
        return None
    _, unsigned = signatures(run_id, events, store.passkeys())
    return None if unsigned is None else Break(run_id, unsigned.seq, unsigned.problem)


def record_signatures(data: bytes, keys: Sequence[Passkey]) -> tuple[int, str | None]:
    """The passkey signatures of an exported record (spec/record.md), checked against
    `keys`: how many hold, and the first problem. The record's own checks come first
    (`runs/record.verify`); this reads only its events."""
    try:
        record = json.loads(data)
        run_id = str(record["run"]["runId"])
        events = [
            Event(e["seq"], e["type"], e["at"], e["actor"], e["stepId"], e["data"], e["hash"])
            for e in record["events"]
        ]
    except (ValueError, KeyError, TypeError):
        return 0, "it is not shaped as a record"
    held, unsigned = signatures(run_id, events, keys)
    return held, None if unsigned is None else unsigned.problem
