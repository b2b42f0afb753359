"""`handrail runs verify`, `handrail runs export` and `handrail key generate`: a run's
record checked in the store or offline, written out, and the key that signs it (see
spec/record.md)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from handrail.cli.options import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, missing_database, with_store
from handrail.model.errors import StorageError
from handrail.settings import settings
from handrail.store.chain import check_run
from handrail.store.open import open_store
from handrail.store.rows import now

if TYPE_CHECKING:
    from handrail.runs.record import Verdict
    from handrail.runs.signing import PublicKey, SigningKey
    from handrail.store.base import RunStore

ALL_RUNS = 2**62  # --all: no limit a store could reach


def add_signing_key_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--signing-key",
        default=None,
        metavar="FILE",
        help=f"an Ed25519 PEM private key that {what} (also HANDRAIL_SIGNING_KEY; "
        "`handrail key generate FILE` makes one)",
    )


def add_record_verbs(verbs: Any, add_database_option: Any, run_help: str) -> None:
    verify = verbs.add_parser(
        "verify", help="recompute runs' hash chains, or check an exported record offline"
    )
    verify.add_argument("run_id", metavar="RUN", nargs="?", help=run_help)
    verify.add_argument("--all", action="store_true", help="every run in the store")
    verify.add_argument(
        "--file", default=None, metavar="FILE", help="an exported record, checked without a store"
    )
    verify.add_argument(
        "--key",
        default=None,
        metavar="FILE",
        help="with --file: the record must be signed by this public key (PEM, or the JSON of "
        "/.well-known/handrail-key)",
    )
    verify.add_argument("--format", choices=["text", "json"], default="text", help="default text")
    add_database_option(verify)
    export = verbs.add_parser("export", help="write a run's self-contained record, signed with --signing-key")
    export.add_argument("run_id", metavar="RUN", help=run_help)
    export.add_argument(
        "-o", "--output", default="-", metavar="FILE", help="where to write it (default stdout)"
    )
    add_signing_key_option(export, "signs the record")
    add_database_option(export)


def add_key(key: argparse.ArgumentParser) -> None:
    verbs = key.add_subparsers(dest="key_command", metavar="VERB")
    generate = verbs.add_parser("generate", help="write a new private key to FILE, readable by you only")
    generate.add_argument("file", metavar="FILE", help="the PEM file to write (never overwritten)")
    key.set_defaults(key_parser=key)


def key_command(args: argparse.Namespace) -> int:
    # loaded here only: `serve` and `runs` import this module, few of their uses need a key (cryptography)
    from handrail.runs.signing import KeyFileError, generate

    if getattr(args, "key_command", None) is None:
        args.key_parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        made = generate(Path(args.file))
    except KeyFileError as exc:
        print(f"handrail key generate: {exc}", file=sys.stderr)
        return EXIT_ERRORS
    print(f"wrote {args.file}: Ed25519 key {made.public.fingerprint}")
    print(json.dumps(made.public.published()))
    return EXIT_OK


def signing_key_of(args: argparse.Namespace, command: str) -> SigningKey | Literal[False] | None:
    """The key --signing-key (or HANDRAIL_SIGNING_KEY) names, None without one, False
    (said on stderr) when it cannot be used: nothing is served or exported unsigned by mistake."""
    # loaded here only: `serve` and `runs` import this module, few of their uses need a key (cryptography)
    from handrail.runs.signing import KeyFileError, load_signing_key

    path = settings(args).signing_key
    if not path:
        return None
    try:
        return load_signing_key(path)
    except KeyFileError as exc:
        print(f"handrail {command}: --signing-key: {exc}", file=sys.stderr)
        return False


def record_command(args: argparse.Namespace) -> int:
    """`runs verify` and `runs export`."""
    verb = args.runs_command
    if verb == "verify":
        chosen = [bool(args.run_id), args.all, args.file is not None]
        if sum(chosen) != 1:
            print("handrail runs verify: name one of RUN, --all or --file FILE", file=sys.stderr)
            return EXIT_USAGE
        if args.key is not None and args.file is None:
            print("handrail runs verify: --key checks an exported record: give --file FILE", file=sys.stderr)
            return EXIT_USAGE
        if args.file is not None:
            return _verify_file(args)
    key: SigningKey | None = None
    if verb == "export":
        found = signing_key_of(args, "runs export")
        if found is False:
            return EXIT_USAGE
        key = found
    return with_existing(
        args,
        f"runs {verb}",
        lambda store: _export(store, args, key) if verb == "export" else _verify_store(store, args),
    )


def with_existing(args: argparse.Namespace, command: str, work: Callable[[RunStore], int]) -> int:
    """`work`'s exit status on the store, opened for writing, never created here."""
    return with_store(command, settings(args).database_url, work, reading=False)


def _export(store: RunStore, args: argparse.Namespace, key: SigningKey | None) -> int:
    # loaded here only: `serve` and `runs` import this module, few of their uses need a key (cryptography)
    from handrail.runs.record import export

    run = store.get(args.run_id)
    if run is None:
        print(f"handrail runs export: Run not found: `{args.run_id}`", file=sys.stderr)
        return EXIT_ERRORS
    data = export(run, store.events(run.id), store.get_source(run.source_hash), now(), key)
    if args.output == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        try:
            Path(args.output).write_bytes(data)
        except OSError as exc:
            print(f"handrail runs export: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_ERRORS
        signed = f", signed by {key.public.fingerprint}" if key else ", unsigned"
        print(
            f"wrote the record of run {run.id} to {args.output} ({run.events} events{signed})",
            file=sys.stderr,
        )
    return EXIT_OK


def _verify_store(store: RunStore, args: argparse.Namespace) -> int:

    if args.all:
        runs = store.list_runs(limit=ALL_RUNS)
    else:
        one = store.get(args.run_id)
        if one is None:
            print(f"handrail runs verify: Run not found: `{args.run_id}`", file=sys.stderr)
            return EXIT_ERRORS
        runs = [one]
    results: list[dict[str, Any]] = []
    for run in runs:
        events = store.events(run.id)
        broken = (
            check_run(store, run.id, run, events)
            or passkey_break(store, run.id, events)
            or replayed_break(store, run, events)
        )
        results.append(
            {"runId": run.id, "events": run.events, "verified": broken is None}
            | ({"broken": broken.as_dict()} if broken else {})
        )
    bad = [r for r in results if not r["verified"]]
    if args.format == "json":
        print(json.dumps({"runs": results, "broken": len(bad)}, indent=2))
    else:
        for r in results:
            if r["verified"]:
                print(f"{r['runId']}  verified  {r['events']} events")
            else:
                print(f"{r['runId']}  BROKEN at event {r['broken']['seq']}: {r['broken']['problem']}")
        print(f"{len(results) - len(bad)} verified, {len(bad)} broken")
    return EXIT_ERRORS if bad else EXIT_OK


def _verify_file(args: argparse.Namespace) -> int:
    # loaded here only: `serve` and `runs` import this module, few of their uses need a key (cryptography)
    from handrail.runs.record import verify
    from handrail.runs.signing import KeyFileError, load_public_key  # as verify

    key: PublicKey | None = None
    if args.key is not None:
        try:
            key = load_public_key(args.key)
        except KeyFileError as exc:
            print(f"handrail runs verify: --key: {exc}", file=sys.stderr)
            return EXIT_USAGE
    try:
        data = Path(args.file).read_bytes()
    except OSError as exc:
        print(f"handrail runs verify: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERRORS
    verdict = verify(data, key)
    if verdict.problem is None:
        verdict = passkey_verdict(args, data, verdict)
    said: dict[str, Any] = {
        "file": args.file,
        "runId": verdict.run_id,
        "events": verdict.events,
        "verified": verdict.problem is None,
        "signedBy": verdict.signed_by,
        "notes": list(verdict.notes),
    }
    if verdict.problem is not None:
        said["problem"] = verdict.problem
    if verdict.broken is not None:
        said["broken"] = verdict.broken.as_dict()
    if verdict.problem is None and verdict.signed_by is None:
        said["notes"].append(
            "the record is unsigned: it shows accidental changes only; anyone can rewrite it and its hashes"
        )
    elif verdict.embedded_key:
        said["notes"].append(
            f"signed by the key the record itself carries ({verdict.signed_by}): that proves it is "
            "unchanged since that key signed it, not who holds the key; compare the fingerprint with "
            "the server's /.well-known/handrail-key, or give --key"
        )
    if args.format == "json":
        print(json.dumps(said, indent=2))
    elif verdict.problem is not None:
        print(f"{args.file}: NOT VERIFIED: {verdict.problem}")
    else:
        signed = f", signed by {verdict.signed_by}" if verdict.signed_by else ""
        print(f"{args.file}: verified: run {verdict.run_id}, {verdict.events} events{signed}")
        for note in said["notes"]:
            print(f"  note: {note}")
    return EXIT_OK if verdict.problem is None else EXIT_ERRORS


def replayed_break(store: RunStore, run: Any, events: Any) -> Any:
    """What of the run's row its events, replayed, do not give (runs/replay.py)."""
    from handrail.runs.replay import replay_break  # lazy: as the record modules

    return replay_break(store, run, events)


def passkey_break(store: RunStore, run_id: str, events: Any) -> Any:
    """The first passkey signature of the run that does not hold (runs/presence.py)."""
    from handrail.runs.presence import signature_break  # lazy: as the record modules

    return signature_break(store, run_id, events)


def passkey_verdict(args: argparse.Namespace, data: bytes, verdict: Verdict) -> Verdict:
    """The verdict on an exported record, its passkey signatures checked against the
    keys registered in the store `--database` names (none there: said in a note,
    nothing checked)."""
    from handrail.runs.presence import record_signatures  # lazy: as the record modules

    if b'"presence"' not in data:
        return verdict
    database, store = settings(args).database_url, None
    if missing_database(database) is None:  # a missing SQLite file is not created here
        with contextlib.suppress(StorageError):
            store = open_store(database, reading=True)
    if store is None:
        note = "no run store to read registered passkeys from: its passkey signatures are unchecked"
        return replace(verdict, notes=(*verdict.notes, note))
    try:
        held, problem = record_signatures(data, store.passkeys())
    finally:
        store.close()
    if problem is not None:
        return replace(verdict, problem=f"a passkey signature does not hold: {problem}")
    note = f"{held} passkey signature{'' if held == 1 else 's'} checked against the registered keys"
    return replace(verdict, notes=(*verdict.notes, note))
