"""`handrail stats`: what the runs of each workflow tell (spec/stats.md), as text,
JSON or Markdown. The figures are computed by the store (store/stats.py)."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from handrail.cli.options import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, add_database_option, with_store
from handrail.store.stats import StatsFilter, workflow_stats

if TYPE_CHECKING:
    from handrail.store import RunStore


def add_stats(stats: argparse.ArgumentParser) -> None:
    stats.add_argument("workflow", nargs="?", default=None, metavar="WORKFLOW", help="only this workflow")
    stats.add_argument("--since", default=None, metavar="DATE", help="runs started on or after DATE (UTC)")
    stats.add_argument(
        "--until", default=None, metavar="DATE", help="runs started before DATE's end (a date: the whole day)"
    )
    stats.add_argument("--person", default=None, metavar="NAME", help="only the runs NAME started")
    stats.add_argument("--format", choices=("text", "json", "md"), default="text", help="default text")
    stats.add_argument("--json", dest="format", action="store_const", const="json", help="as --format json")
    add_database_option(stats)


def moment(text: str, *, end: bool) -> str:
    """A date or an ISO date and time as the store writes times (UTC, milliseconds); a
    bare date given as an end means the end of that day. ValueError names the problem."""
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            at = datetime(day.year, day.month, day.day, tzinfo=UTC) + (
                timedelta(days=1) if end else timedelta()
            )
        else:
            at = datetime.fromisoformat(text.replace("Z", "+00:00"))
            at = at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
    except ValueError:
        raise ValueError(
            f"{text!r} is not a date (2026-01-31) or an ISO time (2026-01-31T12:00:00Z)"
        ) from None
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def stats_command(args: argparse.Namespace) -> int:
    times: dict[str, str | None] = {}
    for option, value in (("since", args.since), ("until", args.until)):
        try:
            times[option] = None if value is None else moment(value, end=option == "until")
        except ValueError as exc:
            print(f"handrail stats: --{option}: {exc}", file=sys.stderr)
            return EXIT_USAGE
    where = StatsFilter(args.workflow, times["since"], times["until"], args.person)

    def read(store: RunStore) -> int:
        found = workflow_stats(store, where)
        unknown = _unknown(args.workflow, store) if args.workflow is not None and not found else None
        if unknown is not None:
            print(f"handrail stats: {unknown}", file=sys.stderr)
            return EXIT_ERRORS
        if args.format == "json":
            sys.stdout.write(json.dumps({"workflows": found}, indent=2, ensure_ascii=False) + "\n")
        else:
            sys.stdout.write(render(found, markdown=args.format == "md"))
        if not found:
            print("handrail stats: no run matches", file=sys.stderr)
        return EXIT_OK

    return with_store("stats", args.database, read)


def _unknown(workflow: str, store: Any) -> str | None:
    """Why `workflow` names no workflow (no run of it, and none in the catalog) with the
    closest names; None when it is one (it may just have no run in the period asked)."""
    import difflib  # lazy: loaded when the command runs

    from handrail.catalog import Catalog, default_sources  # lazy: only for a name with no run

    known = {w["id"] for w in workflow_stats(store, StatsFilter(None, None, None, None))}
    known |= set(Catalog(default_sources()).snapshot().entries)
    if workflow in known:
        return None
    close = difflib.get_close_matches(workflow, sorted(known), n=3, cutoff=0.5)
    hint = "; did you mean " + " or ".join(f"`{c}`" for c in close) + "?" if close else ""
    return f"no workflow `{workflow}` in the runs or the catalog{hint}"


def _percent(rate: float | None) -> str:
    return "-" if rate is None else f"{rate * 100:.0f}%"


def _num(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _one_line(text: str, width: int = 100) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def comparison_lines(workflow: dict[str, Any]) -> list[str]:
    return [
        f"rejection rate at step {c['step']}: "
        + ", ".join(f"{_percent(v['value'])} in {v['version']}" for v in c["values"])
        for c in workflow["comparisons"]
    ]


def render(workflows: list[dict[str, Any]], *, markdown: bool) -> str:
    out: list[str] = []
    for w in workflows:
        for v in w["versions"]:
            out += _version(w["id"], v, markdown)
        lines = comparison_lines(w)
        if lines:
            out.append("## Between versions" if markdown else "Between versions:")
            out += [("- " if markdown else "  ") + line for line in lines]
            out.append("")
    return "\n".join(out) + ("\n" if out else "")


def _table(head: list[str], rows: list[list[str]], markdown: bool) -> list[str]:
    if markdown:
        cells = [[c.replace("|", "\\|") for c in row] for row in rows]
        return [
            "| " + " | ".join(head) + " |",
            "|" + "|".join("---" for _ in head) + "|",
            *("| " + " | ".join(row) + " |" for row in cells),
        ]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    return ["  " + "  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in [head, *rows]]


def _agents(steps: list[dict[str, Any]], markdown: bool) -> list[str]:
    """What the agents `handrail drive` started spent per step; nothing when none ran."""
    driven = [s for s in steps if s["usage"]["processes"]]
    if not driven:
        return []
    rows = [
        [s["id"], str(u["processes"]), str(u["inputTokens"]), str(u["outputTokens"]), f"{u['costUsd']:.4f}"]
        for s in driven
        for u in [s["usage"]]
    ]
    total = sum(s["usage"]["costUsd"] for s in driven)
    head = ["step", "agent processes", "input tokens", "output tokens", "cost USD"]
    title = "## Agents" if markdown else "Agents:"
    end = ["", f"Total: ${total:.4f}"] if markdown else [f"  Total: ${total:.4f}"]
    return [title, *_table(head, rows, markdown), *end, ""]


def _version(workflow_id: str, v: dict[str, Any], markdown: bool) -> list[str]:
    r = v["runs"]
    title = f"{workflow_id} {v['version']}"
    out = [f"# {title}" if markdown else title, ""]
    out.append(
        f"Runs: {r['started']} started, {r['completed']} completed, {r['abandoned']} abandoned, "
        f"{r['active']} active"
    )
    out.append("")
    head = ["step", "reached", "accepted", "abandoned", "rejection rate", "attempts p50/p90/max",
            "seconds p50/p90", "approval wait p50/p90", "gate denials"]  # fmt: skip
    rows = []
    for s in v["steps"]:
        a, t, wait = s["attempts"], s["seconds"], s["approvals"]["waitSeconds"]
        rows.append([
            s["id"], str(s["reached"]), str(s["accepted"]), str(s["abandoned"]), _percent(s["rejectionRate"]),
            f"{_num(a['median'])}/{_num(a['p90'])}/{_num(a['max'])}", f"{_num(t['median'])}/{_num(t['p90'])}",
            f"{_num(wait['median'])}/{_num(wait['p90'])}", str(s["gate"]["denied"]),
        ])  # fmt: skip
    out += _table(head, rows, markdown)
    out.append("")
    issues = [(s["id"], i) for s in v["steps"] for i in s["topIssues"]]
    if issues:
        out.append("## Top issues" if markdown else "Top issues:")
        for step_id, i in issues:
            text = _one_line(i["message"])
            out.append(
                f"- {step_id}: {i['count']} × `{text}`" if markdown else f"  {step_id}: {i['count']} x {text}"
            )
        out.append("")
    out += _agents(v["steps"], markdown)
    if v["checks"]:
        out.append("## Checks" if markdown else "Checks:")
        rows = [
            [f"{c['step']}[{c['index']}]", c["type"], str(c["runs"]), _percent(c["passRate"]),
             _num(c["durationMs"]["median"]), str(c["timeouts"]),
             "; ".join(f"{f['count']} x {_one_line(f['line'], 60)}" for f in c["failingLines"]) or "-"]
            for c in v["checks"]
        ]  # fmt: skip
        out += _table(
            ["check", "type", "runs", "pass", "median ms", "timeouts", "failing last lines"], rows, markdown
        )
        out.append("")
    return out
