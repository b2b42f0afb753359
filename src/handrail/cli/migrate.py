"""`handrail runs migrate` (open runs moved to a newer version of their workflow) and
`handrail check --against-runs` (the open runs a changed file would strand), for
people (spec/runs.md, "Migration")."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from handrail.cli import options
from handrail.cli.options import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, add_database_option, missing_database
from handrail.model.errors import HandrailError, InvalidParams, RunNotFound
from handrail.model.runs import ACTIVE_STATUSES

if TYPE_CHECKING:
    from handrail.model.runs import RunRecord
    from handrail.model.workflow import Workflow
    from handrail.runs import Runs

EVERY_RUN = 1_000_000_000  # a listing's limit that leaves no open run out

MAP_HELP = (
    "a step (or loop) of the run's version that the newer version names otherwise, "
    "as OLD-STEP=NEW-STEP (repeatable)"
)


def add_migrate_verb(verbs: Any) -> None:
    migrate = verbs.add_parser(
        "migrate",
        help="move open runs to a newer version of their workflow",
        epilog="Exit status: 0 every run named moved (or would, with --dry-run); 1 one was refused, "
        "with the reason on stderr; 2 a usage mistake.",
    )
    migrate.add_argument("run_id", nargs="?", default=None, metavar="RUN", help="the run's id, run_...")
    migrate.add_argument(
        "--workflow",
        dest="workflow_id",
        default=None,
        metavar="ID",
        help="every open run of this workflow instead of one run",
    )
    migrate.add_argument(
        "--to",
        required=True,
        metavar="VERSION",
        help="the version to move to: the one the --workflows sources serve now",
    )
    migrate.add_argument("--map", action="append", default=[], metavar="OLD=NEW", help=MAP_HELP)
    migrate.add_argument("--dry-run", action="store_true", help="say what would happen; write nothing")
    migrate.add_argument(
        "--owner",
        default=None,
        metavar="NAME",
        help="act as this person: only their runs move (default: each run as its owner)",
    )
    options.add_source_options(migrate)
    add_database_option(migrate)
    migrate.set_defaults(runs_handler=migrate_runs)


def add_against_runs_options(check: argparse.ArgumentParser) -> None:
    check.add_argument(
        "--against-runs",
        action="store_true",
        help="also list the open runs in the run store (--database) that the checked files would "
        "strand if deployed: exit 1 when there is one",
    )
    check.add_argument("--map", action="append", default=[], metavar="OLD=NEW", help=MAP_HELP)
    add_database_option(check)


def migrate_runs(runs: Runs, args: argparse.Namespace) -> int:
    from handrail.model.approvals import local_person  # lazy: as above
    from handrail.model.request import Request  # lazy: as above
    from handrail.runs.migration import parse_map  # lazy: every command builds the parser of this module

    if (args.run_id is None) == (args.workflow_id is None):
        print("handrail runs migrate: give one RUN or --workflow ID", file=sys.stderr)
        return EXIT_USAGE
    mapping = parse_map(args.map)
    targets: list[RunRecord]
    if args.run_id is not None:
        found = runs.store.get(args.run_id)
        if found is None or (args.owner is not None and found.owner != args.owner):
            raise RunNotFound(data={"runId": args.run_id})
        targets, workflow_id = [found], found.workflow_id
    else:
        workflow_id = args.workflow_id
        targets = runs.store.list_runs(
            statuses=ACTIVE_STATUSES, workflow_id=workflow_id, owner=args.owner, limit=EVERY_RUN
        )
    new = _served(args, workflow_id)
    if new is None:
        return EXIT_ERRORS
    person = args.owner or local_person()
    refused = 0
    for run in reversed(targets):  # oldest first
        request = Request(owner=args.owner or run.owner)
        try:
            moved = runs.migrate(request, run.id, new, mapping, person=person, dry_run=args.dry_run)
        except HandrailError as exc:
            refused += 1
            reason = exc.message if exc.data.get("reason") else f"run {run.id}: {exc.message}"
            print(f"handrail runs migrate: {reason}", file=sys.stderr)
            continue
        print(_moved_line(moved))
    if not targets:
        print(f"no open runs of workflow `{workflow_id}`")
    return EXIT_ERRORS if refused else EXIT_OK


def _moved_line(moved: dict[str, Any]) -> str:
    before, after = moved["from"]["workflowVersion"], moved["to"]["workflowVersion"]
    where = f"at step `{moved['step']}`" if moved.get("step") else f"{moved['status']}"
    if moved.get("dryRun"):
        return (
            f"run {moved['runId']}: would move from {before} to {after}, {where} (dry run: nothing written)"
        )
    if not moved["migrated"]:
        return f"run {moved['runId']}: already on this version ({after}), {where}"
    return f"run {moved['runId']}: moved from {before} to {after}, {where}"


def _served(args: argparse.Namespace, workflow_id: str) -> Workflow | None:
    """The workflow as the configured sources serve it now, in the version --to names."""
    snapshot = options.catalog_of(args).snapshot()
    found = snapshot.get(workflow_id)
    if found is None:
        broken = snapshot.why_broken(workflow_id)
        why = f": its file is broken: {broken.render()}" if broken is not None else " (give --workflows)"
        print(f"handrail runs migrate: the sources serve no workflow `{workflow_id}`{why}", file=sys.stderr)
        return None
    workflow: Workflow = found
    if workflow.version != args.to:
        print(
            f"handrail runs migrate: the sources serve version {workflow.version} of `{workflow_id}` "
            f"({workflow.file}), not --to {args.to}",
            file=sys.stderr,
        )
        return None
    return workflow


def stranded(args: argparse.Namespace, workflows: Sequence[Workflow]) -> int:
    """Print each open run the `workflows` (as checked, not yet deployed) would strand;
    returns how many. A run already on a file's exact source is not listed."""
    from handrail.runs.migration import Stranded, carry, check_map, parse_map  # lazy: as in migrate_runs
    from handrail.service.core import default_runs  # lazy: the run store loads only with --against-runs

    out = sys.stdout if args.format == "text" else sys.stderr  # json and sarif keep stdout to themselves
    missing = missing_database(args.database)
    if missing is not None:
        print(f"--against-runs: no run database at {missing}: no run to strand", file=out)
        return 0
    try:
        mapping = parse_map(args.map)
    except InvalidParams as exc:
        print(f"handrail check: {exc.message}", file=sys.stderr)
        return 1
    runs = default_runs(args.database)
    count, looked = 0, 0
    try:
        listed = {
            w.id: runs.store.list_runs(statuses=ACTIVE_STATUSES, workflow_id=w.id, limit=EVERY_RUN)
            for w in workflows
        }
    except HandrailError as exc:  # a store that cannot be read: say so, as for a broken file
        runs.close()
        print(f"handrail check: --against-runs: {exc.message}", file=sys.stderr)
        return 1
    try:
        for workflow in workflows:
            for run in reversed(listed[workflow.id]):
                if run.source_hash == workflow.content_hash:
                    continue
                looked += 1
                try:
                    old = runs.ledger.pinned(None, run)
                    check_map({k: v for k, v in mapping.items() if k in old.nodes}, old, workflow)
                    outcome = carry(run, old, workflow, mapping)
                except HandrailError as exc:
                    outcome = Stranded(exc.message)
                if isinstance(outcome, Stranded):
                    count += 1
                    step = run.current_step
                    at = f" at step `{step['id']}`" if step else ""
                    print(
                        f"{workflow.file}: run {run.id} ({run.owner}, version {run.workflow_version}{at}) "
                        f"would be stranded by version {workflow.version}: {outcome.reason}",
                        file=out,
                    )
    finally:
        runs.close()
    print(
        f"against runs: {looked} open run{'s' * (looked != 1)} on other versions, {count} would be stranded",
        file=out,
    )
    return count
