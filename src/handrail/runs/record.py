"""A run's record: a self-contained file an auditor can check without the store.

`export` writes the run, its workflow's source, every event with its link in the
chain, the check results and the approvals (read from those events), a digest of it
all and, with a signing key, an Ed25519 signature. The file is the canonical form
of store/chain.py and a newline, nothing else: `verify` refuses any other bytes, so a
change of any byte (a space included) fails it. spec/record.md defines the format.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from handrail.model.runs import Event, EventType, RunRecord
from handrail.runs import machine
from handrail.runs.signing import PublicKey, SigningKey, fingerprint
from handrail.store.chain import Break, first_break
from handrail.store.chain_form import canonical

FORMAT = "handrail-record/1"
DECISIONS = (str(EventType.APPROVED), str(EventType.DECLINED))


def checks_of(events: Sequence[Event]) -> list[dict[str, Any]]:
    """Every check result, with the event that holds it."""
    return [{"seq": e.seq, "stepId": e.step_id, **e.data} for e in events if e.type == EventType.CHECK]


def approvals_of(events: Sequence[Event]) -> list[dict[str, Any]]:
    """Every approval and decline, with the person who gave it."""
    return [
        {
            "seq": e.seq,
            "stepId": e.step_id,
            "decision": e.type,
            "person": e.actor,  # the decision's own `person`, when it has one, follows
            **e.data,
        }
        for e in events
        if e.type in DECISIONS
    ]


def _event(e: Event, prev: str | None) -> dict[str, Any]:
    return {
        "seq": e.seq,
        "type": e.type,
        "at": e.at,
        "actor": e.actor,
        "stepId": e.step_id,
        "data": dict(e.data),
        "prev": prev,
        "hash": e.hash,
    }


def _workflow(source_hash: str, source: bytes | None) -> dict[str, Any]:
    out: dict[str, Any] = {"sourceHash": source_hash}
    if source is None:
        return out  # said by `verify`: the store no longer holds it
    try:
        out["source"] = source.decode("utf-8")
    except UnicodeDecodeError:
        out["sourceBase64"] = base64.b64encode(source).decode()
    return out


def _digest(record: Mapping[str, Any]) -> str:
    return hashlib.sha256(
        canonical({k: v for k, v in record.items() if k not in ("digest", "signature")})
    ).hexdigest()


def export(
    run: RunRecord, events: Sequence[Event], source: bytes | None, at: str, key: SigningKey | None = None
) -> bytes:
    """The record's bytes."""
    linked: list[dict[str, Any]] = []
    prev: str | None = None
    for e in events:
        linked.append(_event(e, prev))
        prev = e.hash
    record: dict[str, Any] = {
        "format": FORMAT,
        "exportedAt": at,
        "run": {
            "runId": run.id,
            "owner": run.owner,
            "workspace": run.workspace,
            "workflowId": run.workflow_id,
            "workflowVersion": run.workflow_version,
            "goal": run.goal,
            "status": str(run.status),
            "createdAt": run.created_at,
            "updatedAt": run.updated_at,
            "events": run.events,
            "head": run.head,
        },
        "workflow": _workflow(run.source_hash, source),
        "events": linked,
        "checks": checks_of(events),
        "approvals": approvals_of(events),
    }
    record["digest"] = _digest(record)
    if key is not None:
        signed = canonical(record)
        record["signature"] = {**key.public.published(), "value": base64.b64encode(key.sign(signed)).decode()}
    return canonical(record) + b"\n"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What `verify` found: `problem` is the first thing that does not hold (None: the
    record is intact), `broken` the chain's first broken link when that is the problem."""

    run_id: str | None = None
    events: int = 0
    problem: str | None = None
    broken: Break | None = None
    signed_by: str | None = None  # the fingerprint of the key whose signature holds
    embedded_key: bool = False  # that key was the record's own, not one the caller gave
    notes: tuple[str, ...] = ()


NO_SOURCE = "the record holds no workflow source (the store had lost it)"


def verify(data: bytes, key: PublicKey | None = None) -> Verdict:
    """Check a record's exact bytes: canonical form, digest, workflow source, chain,
    the checks and approvals against the events, then the signature. With `key`, the
    record must be signed by it."""
    try:
        text = data.decode("ascii")
        record = json.loads(text, parse_constant=_no_constant)
    except UnicodeDecodeError as exc:
        return Verdict(problem=f"byte {exc.start} is not ASCII: a record holds ASCII only")
    except (ValueError, RecursionError) as exc:
        return Verdict(problem=f"it is not JSON ({exc})")
    if not isinstance(record, dict):
        return Verdict(problem="it is not a JSON object")
    try:
        again = canonical(record) + b"\n"
    except (TypeError, ValueError) as exc:
        return Verdict(problem=f"it cannot be written canonically ({exc})")
    if again != data:
        at = next(
            (i for i, (a, b) in enumerate(zip(again, data, strict=False)) if a != b),
            min(len(again), len(data)),
        )
        return Verdict(
            problem=f"it is not in canonical form: it differs from its canonical bytes at byte {at}"
        )
    if record.get("format") != FORMAT:
        return Verdict(problem=f"its format is {record.get('format')!r}, not {FORMAT!r}")
    return _verify(record, key)


def _verify(record: dict[str, Any], key: PublicKey | None) -> Verdict:
    """The checks of a canonical record's content, in order, each run only while the
    ones before it held; the verdict is made once, of what they found."""
    run_id: str | None = None
    events: list[Event] = []
    broken: Break | None = None
    notes: tuple[str, ...] = ()
    signed_by: str | None = None
    try:
        run = record["run"]
        run_id = str(run["runId"])
        problem = _source_problem(record)
        if problem is None and not ("source" in record["workflow"] or "sourceBase64" in record["workflow"]):
            notes = (NO_SOURCE,)
        if problem is None:
            events = [
                Event(e["seq"], e["type"], e["at"], e["actor"], e["stepId"], e["data"], e["hash"])
                for e in record["events"]
            ]
            broken = first_break(run_id, events, run["head"], run["events"])
            problem = f"event {broken.seq}: {broken.problem}" if broken else _log_problem(record, events)
        if problem is None:
            signed_by, problem = _signature(record, key)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        problem = f"it is not shaped as a record ({type(exc).__name__}: {exc})"
    embedded = signed_by is not None and key is None
    return Verdict(run_id, len(events), problem, broken, signed_by, embedded, notes)


def _source_problem(record: Mapping[str, Any]) -> str | None:
    """Whether the record is the one its digest was made of, and its workflow's source
    (when it holds one) the one its hash names."""
    if record.get("digest") != _digest(record):
        return "its digest does not match its content: it was changed after it was written"
    workflow = record["workflow"]
    source_hash = workflow["sourceHash"]
    if "source" in workflow or "sourceBase64" in workflow:
        source = (
            workflow["source"].encode("utf-8")
            if "source" in workflow
            else base64.b64decode(workflow["sourceBase64"], validate=True)
        )
        if hashlib.sha256(source).hexdigest() != source_hash:
            return "the workflow's source does not match its hash"
    return None


def _log_problem(record: Mapping[str, Any], events: Sequence[Event]) -> str | None:
    """What of the record its unbroken chain of events does not bear out: the links,
    the workflow followed, the run header, the checks and the approvals."""
    for e, prev in zip(record["events"], [None, *(e.hash for e in events)], strict=False):
        if e["prev"] != prev:
            return f"event {e['seq']}: its prev is not the hash of the event before it"
    source_hash = record["workflow"]["sourceHash"]
    followed = events[0].data.get("sourceHash", source_hash) if events else source_hash
    for e in events:  # a migrated run follows the source it last moved to
        moved = e.data.get("to") if e.type == "migrated" else None
        if isinstance(moved, dict) and isinstance(moved.get("sourceHash"), str):
            followed = moved["sourceHash"]
    if followed != source_hash:
        return "the workflow's hash is not the one the run started on (or last migrated to)"
    told = _header_problem(record["run"], events)
    if told is not None:
        return told
    if record["checks"] != checks_of(events):
        return "its check results are not the ones its events hold"
    if record["approvals"] != approvals_of(events):
        return "its approvals are not the ones its events hold"
    return None


def _header_problem(run: Mapping[str, Any], events: Sequence[Event]) -> str | None:
    """The first field of the record's `run` header its events do not bear out: who
    started it, on which workflow and version (the last migration's), for what goal, in
    which folder, when, and the status the transition table gives for the events. The
    header is the run row as the store kept it; the row is a cache of the log, so a
    header the log does not give was changed after it was written."""
    if not events or events[0].type != EventType.STARTED:
        return "its first event is not `started`: the record is not a whole run"
    started = events[0]
    said: dict[str, Any] = {"owner": started.actor, "createdAt": started.at}
    for key in ("workflowId", "workflowVersion", "goal", "workspace"):
        if key in started.data:  # every run starts with them; a record from before may lack one
            said[key] = started.data[key]
    for e in events:
        moved = e.data.get("to") if e.type == EventType.MIGRATED else None
        if isinstance(moved, Mapping) and "workflowVersion" in moved:
            said["workflowVersion"] = moved["workflowVersion"]
    try:
        status = machine.after(None, [EventType(e.type) for e in events])
    except ValueError as exc:
        return f"its events hold a type no run has ({exc})"
    if status is None:
        return "its events are not a sequence the run's transition table allows"
    said["status"] = str(status)
    for key, value in said.items():
        if run.get(key) != value:
            return (
                f"its run header's `{key}` is {run.get(key)!r}, but its events say {value!r}: "
                "the header was changed after it was written"
            )
    return None


def _signature(record: dict[str, Any], key: PublicKey | None) -> tuple[str | None, str | None]:
    """The fingerprint of the key whose signature holds (None: unsigned), and what does
    not hold of the signature (None: nothing)."""
    signature = record.get("signature")
    if signature is None:
        return None, ("it is not signed, and --key asks for a signature" if key is not None else None)
    raw = base64.b64decode(signature["publicKey"], validate=True)
    if signature.get("algorithm") != "Ed25519" or signature.get("fingerprint") != fingerprint(raw):
        return None, "its signature's key fingerprint does not match the key it embeds"
    signer = PublicKey(raw)
    if key is not None and key.raw != signer.raw:
        return None, f"it is signed by key {signer.fingerprint}, not by the key given ({key.fingerprint})"
    signed = canonical({k: v for k, v in record.items() if k != "signature"})
    if not signer.verifies(base64.b64decode(signature["value"], validate=True), signed):
        return None, "its signature does not hold"
    return signer.fingerprint, None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
