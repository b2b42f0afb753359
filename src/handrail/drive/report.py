"""What `handrail drive` leaves at the end: one JSON object (`--json`), a Markdown
summary or JUnit XML (`--report FILE`, XML when FILE ends in `.xml`), the Markdown
also appended to `$GITHUB_STEP_SUMMARY` when that is set."""

from __future__ import annotations

from typing import Any
from xml.sax.saxutils import escape, quoteattr

from handrail.drive.driver import Outcome


def as_json(outcome: Outcome) -> dict[str, Any]:
    return {
        "runId": outcome.run_id,
        "workflowId": outcome.workflow,
        "status": outcome.status,
        "exitCode": outcome.exit_code,
        "reason": outcome.reason,
        "costUsd": round(outcome.cost_usd, 6),
        "steps": [
            {
                "stepId": s.step,
                "title": s.title,
                "attempts": s.attempts,
                "accepted": s.accepted,
                "costUsd": round(s.cost_usd, 6),
                "tokens": s.tokens,
                "issues": s.issues,
                "checks": s.checks,
                **({"work": s.work} if s.work else {}),
            }
            for s in outcome.steps
        ],
    }


def markdown(outcome: Outcome) -> str:
    lines = [
        f"## handrail drive: {outcome.workflow or 'run'} {outcome.run_id or ''}".rstrip(),
        "",
        f"**{outcome.status}** (exit {outcome.exit_code}): {outcome.reason}. Cost ${outcome.cost_usd:.4f}.",
        "",
        "| step | attempts | accepted | tokens | cost (USD) |",
        "|---|---|---|---|---|",
    ]
    for s in outcome.steps:
        accepted = "yes" if s.accepted else "no"
        lines.append(f"| {_cell(s.title)} | {s.attempts} | {accepted} | {s.tokens} | {s.cost_usd:.4f} |")
    for s in outcome.steps:
        if s.checks:
            lines += ["", f"Checks of `{s.step}`, its last attempt:", *(f"- {_cell(c)}" for c in s.checks)]
        if s.issues:
            lines += ["", f"Issues of `{s.step}`:", *(f"- {_cell(i)}" for i in s.issues)]
        if s.work:
            lines += ["", *s.work.splitlines()]
    return "\n".join(lines) + "\n"


def junit(outcome: Outcome) -> str:
    failures = sum(1 for s in outcome.steps if not s.accepted)
    cases = []
    for s in outcome.steps:
        head = f"<testcase classname={quoteattr(outcome.workflow)} name={quoteattr(s.step)}"
        if s.accepted:
            cases.append(f"  {head}/>")
        else:
            message = quoteattr("; ".join(s.issues) or outcome.reason)
            cases.append(f"  {head}><failure message={message}>{escape(outcome.reason)}</failure></testcase>")
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<testsuite name={quoteattr('handrail drive ' + (outcome.run_id or ''))} "
        f'tests="{len(outcome.steps)}" failures="{failures}">\n' + "\n".join(cases) + "\n</testsuite>\n"
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
