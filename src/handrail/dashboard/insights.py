"""The Insights page's drawings, rendered on the server as SVG (readable without
JavaScript): the step graph coloured by rejection rate, and the completion funnel.
Every text drawn is escaped; the figures are store/stats.py's."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from markupsafe import Markup, escape

from handrail.model.workflow import Step

if TYPE_CHECKING:
    from handrail.model.workflow import Workflow

BOX_W, BOX_H, GAP = 150, 54, 36  # a step's box in the graph, and the arrow between two
BAR_H, LABEL_W, BAR_W = 22, 150, 420  # the funnel's rows


def rate_colour(rate: float | None) -> str:
    """Green at no rejection to red at half or more of the submissions rejected; grey: none made."""
    if rate is None:
        return "#e5e7eb"
    share = min(rate / 0.5, 1.0)
    hue = round(140 * (1 - share))  # 140 green .. 0 red
    return f"hsl({hue}, 70%, 80%)"


def _percent(rate: float | None) -> str:
    return "no submission" if rate is None else f"{rate * 100:.0f}% rejected"


def step_graph(steps: list[dict[str, Any]]) -> Markup:
    """The steps in their workflow's order, each box filled by its rejection rate."""
    width = max(1, len(steps)) * (BOX_W + GAP)
    parts = [
        f'<svg class="step-graph" role="img" viewBox="0 0 {width} {BOX_H + 8}" width="{width}" '
        f'height="{BOX_H + 8}" xmlns="http://www.w3.org/2000/svg">',
        "<title>Steps coloured by rejection rate</title>",
    ]
    for i, step in enumerate(steps):
        x = i * (BOX_W + GAP) + 4
        rate = step["rejectionRate"]
        shown = "" if rate is None else rate
        parts.append(
            f'<g class="step-node" data-step="{escape(step["id"])}" data-rate="{shown}">'
            f"<title>{escape(step['id'])}: {_percent(rate)}</title>"
            f'<rect x="{x}" y="4" width="{BOX_W}" height="{BOX_H}" rx="6" fill="{rate_colour(rate)}" '
            'stroke="#52606d"/>'
            f'<text x="{x + BOX_W / 2}" y="26" text-anchor="middle" font-size="13" font-weight="600">'
            f"{escape(_short(step['id']))}</text>"
            f'<text x="{x + BOX_W / 2}" y="45" text-anchor="middle" font-size="12">'
            f"{_percent(rate)}</text></g>"
        )
        if i + 1 < len(steps):
            x0, x1, y = x + BOX_W, x + BOX_W + GAP - 4, 4 + BOX_H / 2
            parts.append(
                f'<line x1="{x0}" y1="{y}" x2="{x1}" y2="{y}" stroke="#52606d" stroke-width="1.5"/>'
                f'<path d="M{x1} {y} l-7 -4 v8 z" fill="#52606d"/>'
            )
    parts.append("</svg>")
    return Markup("".join(parts))


def funnel(started: int, steps: list[dict[str, Any]]) -> Markup:
    """How many runs reached each step (bar), and how many were abandoned there (red end)."""
    height = (len(steps) + 1) * (BAR_H + 6)
    width = LABEL_W + BAR_W + 190
    scale = BAR_W / max(1, started)
    parts = [
        f'<svg class="funnel" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        'xmlns="http://www.w3.org/2000/svg"><title>Runs reaching each step</title>'
    ]
    rows = [("started", started, 0), *((s["id"], s["reached"], s["abandoned"]) for s in steps)]
    for i, (name, reached, abandoned) in enumerate(rows):
        y = i * (BAR_H + 6)
        kept = (reached - abandoned) * scale
        parts.append(
            f'<g class="funnel-row" data-step="{escape(name)}" data-reached="{reached}">'
            f'<text x="{LABEL_W - 8}" y="{y + 16}" text-anchor="end" font-size="13">'
            f"{escape(_short(name))}</text>"
            f'<rect x="{LABEL_W}" y="{y}" width="{kept:.1f}" height="{BAR_H}" fill="#2457a6"/>'
            f'<rect x="{LABEL_W + kept:.1f}" y="{y}" width="{abandoned * scale:.1f}" height="{BAR_H}" '
            'fill="#dc2626"/>'
            f'<text x="{LABEL_W + reached * scale + 6:.1f}" y="{y + 16}" font-size="12">{reached} reached'
            + (f", {abandoned} abandoned here" if abandoned else "")
            + "</text></g>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def _short(text: str, most: int = 20) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


def check_labels(workflow: Workflow | None) -> dict[tuple[str, int], str]:
    """Each check's label, by its step and place in the step's list (as the figures name
    it): the message the workflow gives it, else what it looks for in words."""
    if workflow is None:
        return {}
    return {
        (node.id, index): check.message or check.description
        for node in workflow.nodes.values()
        if isinstance(node, Step)
        for index, check in enumerate(node.checks)
    }


def pages(
    workflows: list[dict[str, Any]], pinned: Callable[[str, str], Workflow | None] = lambda wf, ver: None
) -> list[dict[str, Any]]:
    """Each workflow's versions with their drawings, newest version first; `pinned(id,
    version)`: that version's workflow, where its checks' labels are read (None: unknown)."""
    out = []
    for w in workflows:
        versions = []
        for v in reversed(w["versions"]):
            labels = check_labels(pinned(w["id"], v["version"])) if v["checks"] else {}
            checks = [
                {**c, "label": labels.get((c["step"], c["index"]), f"check {c['index'] + 1} of {c['step']}")}
                for c in v["checks"]
            ]
            versions.append(
                {
                    **v,
                    "checks": checks,
                    "graph": step_graph(v["steps"]),
                    "funnel": funnel(v["runs"]["started"], v["steps"]),
                }
            )
        out.append({"id": w["id"], "versions": versions, "comparisons": w["comparisons"]})
    return out
