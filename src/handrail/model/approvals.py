"""Approvals' vocabulary: what a person is asked when a step needs them, and how the
answer comes back. The protocol surface builds these, the service hands them up, the
run operations put and read them; none of them owns them, so the kernel does.

A run whose current step's `requireConfirmation` holds waits, after the step's rules
and checks pass, in status `awaiting_approval` until a person decides. The request
(handrail.model.request) carries how this client can be asked, its `approver`:
- one that asks at once and waits for the answer (stdio's `elicitation/create`);
- one that carries an answer on the client's retry of the same call, and otherwise
  returns `InputRequired`: a result, which the protocol sends as the client's
  question (2026-07-28 `input_required`);
- none: nobody is asked here; a person runs `handrail runs approve RUN`.
How those look on the wire is the protocol's business (protocol/surface/approvals.py);
how a question is put and an answer checked against the run's log is the run's
(runs/approvals.py). See spec/runs.md, "Approvals".
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Protocol


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
    # URL mode: the run's dashboard page, where the person decides; the client's answer
    # then only says whether they opened it. None: a form the client's answer decides
    page: str | None = None

    @property
    def request_state(self) -> str:
        return f"{self.run_id}:{self.asked}:{self.nonce}"


class Approver(Protocol):
    person: str
    via: str  # what an approval through it records as where it came from (`elicitation`, ...)
    url: bool  # the client can send the person to a page (URL-mode elicitation)
    form: bool  # the client can show the person a form (form-mode elicitation)

    def given(self) -> Answer | None:
        """An answer this call already carries (2026: on a retry), before anything is asked."""

    def ask(self, question: Question) -> Decision | InputRequired | None:
        """The person's decision; `InputRequired` when the client is to ask them and call
        again; None when they could not be asked or did not answer in time (the run then
        waits for `handrail runs approve`)."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A client's answer as the call carries it: the decision and the question it claims
    to answer (`request_state`, None when the call names none)."""

    decision: Decision
    request_state: str | None


@dataclass(frozen=True, slots=True)
class InputRequired:
    """The answer to a call whose client is to ask the person `question`, then call again
    with the answer: a result handed up to the protocol, not an error."""

    question: Question


def local_person() -> str:
    """The person at this machine, whom a decision names when no token names one: the
    OS user name. The environment is read each time (as getpass does); the password
    database only once, as it is asked on every call."""
    for name in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        if user := os.environ.get(name):
            return user
    return _account_name()


@functools.cache
def _account_name() -> str:
    try:
        import pwd  # lazy: only naming the local person needs it

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError, OSError):
        return "local"
