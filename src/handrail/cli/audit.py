"""`handrail audit`: the audit trail of every run's events as JSON lines (runs/audit.py),
from a time on; `--verify FILE` holds such a file against the store."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from handrail.cli.options import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, add_database_option, with_store
from handrail.cli.stats import moment

if TYPE_CHECKING:
    from handrail.store import RunStore


def add_audit(audit: argparse.ArgumentParser) -> None:
    audit.add_argument(
        "--since", default=None, metavar="T", help="events at or after T (a date, or ISO time, UTC)"
    )
    audit.add_argument(
        "--format", choices=("jsonl",), default="jsonl", help="one JSON object a line (default)"
    )
    audit.add_argument(
        "--verify", default=None, metavar="FILE", help="check FILE's lines against the store instead"
    )
    add_database_option(audit)


def audit_command(args: argparse.Namespace) -> int:
    try:
        since = "" if args.since is None else moment(args.since, end=False)
    except ValueError as exc:
        print(f"handrail audit: --since: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from handrail.runs import audit  # lazy: loaded when the command runs

    def read(store: RunStore) -> int:
        if args.verify is not None:
            return _verify(store, Path(args.verify), audit)
        out = sys.stdout.buffer
        for text in audit.since(store, since):
            out.write(text)
        out.flush()
        return EXIT_OK

    return with_store("audit", args.database, read)


def _verify(store: Any, path: Path, audit: Any) -> int:
    try:
        with path.open("rb") as lines:
            problem = audit.verify(store, lines)
    except OSError as exc:
        print(f"handrail audit: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    if problem is not None:
        print(f"{path}: NOT VERIFIED: {problem}")
        return EXIT_ERRORS
    print(f"{path}: verified against the store")
    return EXIT_OK
