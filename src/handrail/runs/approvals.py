"""Approvals: what a person is asked when a step needs them, and how the answer comes.

A run whose current step's `requireConfirmation` holds waits, after the step's rules
and checks pass, in status `awaiting_approval` until a person decides. The transport
says, per request, how this client can be asked (`REQUEST_APPROVER`):
- a 2025-era client that declared `elicitation`, over a channel that can carry a
  request back (stdio): `elicitation/create`, answered while the call waits;
- a 2026-07-28 client that declared it: an `input_required` result (`InputRequired`),
  answered on the client's retry of the same call;
- any other client: nobody is asked here; a person runs `handrail runs approve RUN`.

A client's answer counts only for a question the server put for the approval the run
waits on: each question is an `approval_asked` event, and an answer is used only while
that event is still the run's latest word on its approval (so once, and never for
another run, step or iteration). On the 2026 path the client carries the question back
in `requestState`, whose random nonce only the SHA-256 in the event can confirm.
See spec/runs.md, "Approvals".
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import secrets
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

OUTPUT_START = 400  # how much of the output the question quotes
APPROVAL_KEY = "approval"  # the key of our request in an input_required result
ACTIONS = ("accept", "decline", "cancel")
ASKED = "approval_asked"  # the event of a question put to a client


@dataclass(frozen=True, slots=True)
class Decision:
    approve: bool  # accept; decline and cancel are both "no"
    person: str
    comment: str | None = None
    action: str = "accept"


@dataclass(frozen=True, slots=True)
class Question:
    run_id: str
    step_id: str
    title: str
    output: str
    workflow_id: str
    asked: int = 0  # the seq of its `approval_asked` event
    nonce: str = ""  # what the client must bring back (2026: in requestState)

    @property
    def request_state(self) -> str:
        return f"{self.run_id}:{self.asked}:{self.nonce}"

    def elicitation(self) -> dict[str, Any]:
        """`elicitation/create` params (form mode): a message and one optional comment."""
        text = " ".join(self.output.split())
        if len(text) > OUTPUT_START:
            text = text[: OUTPUT_START - 1].rstrip() + "…"
        return {
            "mode": "form",
            "message": (
                f"Approve step `{self.step_id}` ({self.title}) of run {self.run_id} "
                f"({self.workflow_id})? The agent's output begins:\n\n{text}\n\n"
                "Accept to approve it; decline to send it back to the agent."
            ),
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "comment": {
                        "type": "string",
                        "title": "Comment",
                        "description": "Optional: a note for the run's record (on decline, what to change)",
                        "maxLength": 2000,
                    }
                },
            },
        }


class Approver(Protocol):
    person: str

    def given(self) -> Answer | None:
        """An answer this call already carries (2026: on a retry), before anything is asked."""

    def ask(self, question: Question) -> Decision | None:
        """The person's decision; None when they could not be asked or did not answer
        in time (the run then waits for `handrail runs approve`)."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A client's answer as the call carries it: the decision and the question it claims
    to answer (`request_state`, None when the call names none)."""

    decision: Decision
    request_state: str | None


def new_nonce() -> tuple[str, str]:
    """A question's nonce and the digest its event keeps (the log never holds the nonce)."""
    nonce = secrets.token_urlsafe(24)
    return nonce, digest(nonce)


def digest(nonce: str) -> str:
    return hashlib.sha256(nonce.encode("utf-8", "replace")).hexdigest()


def same_digest(nonce: str, kept: object) -> bool:
    return isinstance(kept, str) and hmac.compare_digest(digest(nonce), kept)


def parse_request_state(state: str) -> tuple[str, int, str] | None:
    """(runId, question seq, nonce) from a requestState this server made; None otherwise."""
    parts = state.split(":")
    if len(parts) != 3 or not parts[1].isdigit() or len(parts[1]) > 12 or not parts[2]:
        return None
    return parts[0], int(parts[1]), parts[2]


class InputRequired(Exception):
    """Raised through the service to the protocol: answer `resultType: input_required`."""

    def __init__(self, question: Question) -> None:
        super().__init__(question.run_id)
        self.question = question

    def result(self) -> dict[str, Any]:
        return {
            "resultType": "input_required",
            "inputRequests": {
                APPROVAL_KEY: {"method": "elicitation/create", "params": self.question.elicitation()}
            },
            "requestState": self.question.request_state,
        }


# Set by a transport, per request, to how this client can be asked (None: it cannot).
REQUEST_APPROVER: ContextVar[Approver | None] = ContextVar("handrail_request_approver", default=None)


def local_person() -> str:
    """The person at this machine: the OS user name. The environment is read each time
    (as getpass does); the password database only once, as it is asked on every call."""
    for name in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        if user := os.environ.get(name):
            return user
    return _account_name()


@functools.cache
def _account_name() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError, OSError):
        return "local"


def decision_from(result: Any, person: str) -> Decision | None:
    """An ElicitResult (`{action, content?}`) as a decision; None when it is not one."""
    if not isinstance(result, Mapping) or result.get("action") not in ACTIONS:
        return None
    content = result.get("content")
    comment = content.get("comment") if isinstance(content, Mapping) else None
    comment = comment.strip()[:2000] if isinstance(comment, str) and comment.strip() else None
    if comment is not None:  # half of a UTF-16 pair is kept written out (`\ud800`), as text a run can hold
        comment = comment.encode("utf-8", "backslashreplace").decode("utf-8")
    action = str(result["action"])
    return Decision(action == "accept", person, comment, action)


class AnsweredOnRetry:
    """2026-07-28: the answer, when this call is the client's retry; else ask for it."""

    def __init__(self, responses: Any, request_state: Any, person: str) -> None:
        self.responses = responses if isinstance(responses, Mapping) else {}
        self.request_state = request_state[:200] if isinstance(request_state, str) else None
        self.person = person

    def given(self) -> Answer | None:
        decision = decision_from(self.responses.get(APPROVAL_KEY), self.person)
        return Answer(decision, self.request_state) if decision is not None else None

    def ask(self, question: Question) -> Decision | None:
        raise InputRequired(question)


class AskedNow:
    """2025 era over a two-way channel: `elicitation/create`, waited for."""

    def __init__(self, send: Any, person: str, timeout: float) -> None:
        self.send = send  # (method, params, timeout) -> result | None
        self.person = person
        self.timeout = timeout

    def given(self) -> Answer | None:
        return None  # answers come only to the request sent, under its random id

    def ask(self, question: Question) -> Decision | None:
        return decision_from(
            self.send("elicitation/create", question.elicitation(), self.timeout), self.person
        )
