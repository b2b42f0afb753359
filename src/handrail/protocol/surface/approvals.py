"""Approvals as MCP carries them (spec/runs.md, "Approvals"): which approver a call to
workflow_continue gets, the `elicitation/create` question, the 2026-07-28
`input_required` result, and the client's answer read back as a decision.

- a 2025-era client that declared `elicitation`, over a channel that can carry a
  request back (stdio): `elicitation/create`, answered while the call waits (`AskedNow`);
- a 2026-07-28 client that declared it: an `input_required` result, answered on the
  client's retry of the same call (`AnsweredOnRetry`);
- any other client: no approver; a person runs `handrail runs approve RUN`.

A client that declared URL mode (`elicitation: {url: {}}`) is sent to the run's dashboard
page when the server knows its address (the question's `page`): `mode: "url"`, with an
`elicitationId` the server names again in `notifications/elicitation/complete` once a
person decided (stdio; best effort). Its answer only says whether the person opened it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from handrail.model.approvals import Answer, Decision, InputRequired, Question, local_person
from handrail.model.request import Request

OUTPUT_START = 400  # how much of the output the question quotes
APPROVAL_KEY = "approval"  # the key of our request in an input_required result
ACTIONS = ("accept", "decline", "cancel")
ELICITATION_TIMEOUT_S = 600.0  # how long a person has to answer an approval asked through the client

Ask = Callable[[str, Any, float], Any]  # (method, params, timeout) -> result | None
Opened = Callable[[str, str, int], None]  # (elicitationId, runId, question seq)
FORM = frozenset({"form"})  # the modes of a client that declared `elicitation: {}`


def approver_for(
    request: Request, params: Mapping[str, Any], ask: Ask | None, opened: Opened | None = None
) -> Any:
    """How this client can be asked to approve a step in this call, or None. `ask`: a
    server-to-client request waited for (None: the session has no channel back);
    `opened`: told of each URL-mode question sent, to say later when it is complete."""
    person = request.owner or local_person()
    modes = elicitation_modes(request.capabilities)
    if not modes:
        return None
    if request.modern:
        return AnsweredOnRetry(params.get("inputResponses"), params.get("requestState"), person, modes)
    if ask is None:
        return None
    return AskedNow(ask, person, ELICITATION_TIMEOUT_S, modes, opened)


def elicitation_modes(capabilities: Mapping[str, Any]) -> frozenset[str]:
    """The elicitation modes a client declared: an empty `elicitation` object means form
    mode alone (as clients declared it before URL mode existed)."""
    if "elicitation" not in capabilities:
        return frozenset()
    declared = capabilities["elicitation"]
    if not isinstance(declared, Mapping):
        return FORM
    modes = frozenset(mode for mode in ("form", "url") if mode in declared)
    return modes or FORM


def elicitation_id(question: Question) -> str:
    """The id of a URL-mode question: its run and the seq of its `approval_asked` event
    (an id to match the completion notice by, not a secret: it decides nothing)."""
    return f"handrail-approval-{question.run_id}-{question.asked}"


def completed(elicitation: str) -> dict[str, Any]:
    """The notification that a URL-mode question's page has done its part: a person decided."""
    return {
        "jsonrpc": "2.0",
        "method": "notifications/elicitation/complete",
        "params": {"elicitationId": elicitation},
    }


def elicitation(question: Question) -> dict[str, Any]:
    """`elicitation/create` params: the run's page (URL mode) when the question has one,
    else a form with a message and one optional comment."""
    if question.page is not None:
        return {
            "mode": "url",
            "message": (
                f"Step `{question.step_id}` ({question.title}) of run {question.run_id} "
                f"({question.workflow_id}) waits for a person's approval. Open the run's page to "
                "read the agent's output and approve or decline it there, signed in as yourself."
            ),
            "url": question.page,
            "elicitationId": elicitation_id(question),
        }
    text = " ".join(question.output.split())
    if len(text) > OUTPUT_START:
        text = text[: OUTPUT_START - 1].rstrip() + "…"
    return {
        "mode": "form",
        "message": (
            f"Approve step `{question.step_id}` ({question.title}) of run {question.run_id} "
            f"({question.workflow_id})? The agent's output begins:\n\n{text}\n\n"
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


def input_required(asked: InputRequired) -> dict[str, Any]:
    """A 2026-07-28 result asking the client to put the question to the person, then retry."""
    question = asked.question
    return {
        "resultType": "input_required",
        "inputRequests": {APPROVAL_KEY: {"method": "elicitation/create", "params": elicitation(question)}},
        "requestState": question.request_state,
    }


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

    def __init__(self, responses: Any, request_state: Any, person: str, modes: frozenset[str] = FORM) -> None:
        self.responses = responses if isinstance(responses, Mapping) else {}
        self.request_state = request_state[:200] if isinstance(request_state, str) else None
        self.person = person
        self.via = "input_required"  # what the approval records as where it came from
        self.url = "url" in modes
        self.form = "form" in modes

    def given(self) -> Answer | None:
        decision = decision_from(self.responses.get(APPROVAL_KEY), self.person)
        return Answer(decision, self.request_state) if decision is not None else None

    def ask(self, question: Question) -> InputRequired:
        return InputRequired(question)


class AskedNow:
    """2025 era over a two-way channel: `elicitation/create`, waited for."""

    def __init__(
        self,
        send: Ask,
        person: str,
        timeout: float,
        modes: frozenset[str] = FORM,
        opened: Opened | None = None,
    ) -> None:
        self.send = send
        self.person = person
        self.timeout = timeout
        self.via = "elicitation"
        self.url = "url" in modes
        self.form = "form" in modes
        self.opened = opened

    def given(self) -> Answer | None:
        return None  # answers come only to the request sent, under its random id

    def ask(self, question: Question) -> Decision | None:
        if question.page is not None:  # the person decides on the page; the answer decides nothing
            if self.opened is not None:
                self.opened(elicitation_id(question), question.run_id, question.asked)
            self.send("elicitation/create", elicitation(question), self.timeout)
            return None
        return decision_from(
            self.send("elicitation/create", elicitation(question), self.timeout), self.person
        )
