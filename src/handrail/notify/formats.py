"""The body each kind of receiver reads: the plain JSON event (spec/notify.md), a Slack
incoming-webhook message (text and blocks) or a Teams incoming-webhook message (an
Adaptive Card)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from handrail.model.codec import encode
from handrail.notify.targets import Format

HEADLINES = {
    "run.awaiting_approval": "is waiting for approval",
    "run.approved": "was approved",
    "run.declined": "was declined",
    "run.completed": "completed",
    "run.abandoned": "was abandoned",
    "run.check_failing": "keeps failing a check",
    "run.stuck": "has been idle",
    "run.approval_link": "waits for your decision: open the one-time link to take it",
    "test": "is a test notification from handrail",
}


def summary(event: Mapping[str, Any]) -> str:
    """One line a person reads: what happened, to which run, at which step, by whom."""
    run = event.get("run") or {}
    step = event.get("step") or {}
    kind = str(event.get("type"))
    text = f"Run {run.get('id')} ({run.get('workflowId')}) {HEADLINES.get(kind, kind)}"
    if step:
        text += f" at step {step.get('title') or step.get('id')}"
    details = event.get("details") or {}
    if details.get("by") == "agent":  # an agent's workflow_abandon, told apart from a person's
        return f"{text}, by an agent of {event.get('person')} (session {details.get('session')})"
    return f"{text}, by {event.get('person')}"


def _facts(event: Mapping[str, Any]) -> list[tuple[str, str]]:
    run = event.get("run") or {}
    step = event.get("step") or {}
    facts = [
        ("Workflow", str(run.get("workflowId"))),
        ("Run", str(run.get("id"))),
        ("Step", str(step.get("title") or step.get("id")) if step else "-"),
        ("Person", str(event.get("person"))),
    ]
    details = event.get("details") or {}
    for key in ("comment", "reason", "by", "session"):
        if key in details:
            facts.append((key.capitalize(), str(details[key])))
    return facts


def slack(event: Mapping[str, Any]) -> dict[str, Any]:
    line = summary(event)
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "plain_text", "text": line[:3000]}},
        {
            "type": "section",
            "fields": [{"type": "mrkdwn", "text": f"*{k}*\n{_escaped(v)[:1900]}"} for k, v in _facts(event)][
                :10
            ],
        },
    ]
    if event.get("link"):
        blocks.append(
            {
                "type": "actions",
                "elements": [
                    {
                        "type": "button",
                        "text": {"type": "plain_text", "text": "Open the run"},
                        "url": event["link"],
                    }
                ],
            }
        )
    return {"text": _escaped(line), "blocks": blocks}


def _escaped(text: str) -> str:
    """Slack's mrkdwn reads `&`, `<` and `>` as markup."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def teams(event: Mapping[str, Any]) -> dict[str, Any]:
    card: dict[str, Any] = {
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": [
            {"type": "TextBlock", "text": summary(event), "wrap": True, "weight": "Bolder"},
            {"type": "FactSet", "facts": [{"title": k, "value": v} for k, v in _facts(event)]},
        ],
    }
    if event.get("link"):
        card["actions"] = [{"type": "Action.OpenUrl", "title": "Open the run", "url": event["link"]}]
    return {
        "type": "message",
        "attachments": [
            {"contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": None, "content": card}
        ],
    }


def body(kind: Format, notification_id: str, event: Mapping[str, Any]) -> bytes:
    """What is POSTed: the plain event carries its notification's id (the idempotency key)."""
    if kind == Format.SLACK:
        return encode(slack(event))
    if kind == Format.TEAMS:
        return encode(teams(event))
    return encode({"id": notification_id, **event})
