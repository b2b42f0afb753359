"""`handrail person passkey add|list|remove`: a person's passkeys, which an approval
signs with where the agent shares the channel (spec/runs.md, "Presence"). A passkey is
made in the browser, on the dashboard's page for it: `add` opens that page."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from handrail.cli.options import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, add_database_option
from handrail.store.base import LOCAL_OWNER

if TYPE_CHECKING:
    from handrail.store.base import RunStore

DASHBOARD = "http://localhost:8766"  # `handrail dashboard`: WebAuthn needs a host name, not 127.0.0.1


def add_person(person: argparse.ArgumentParser) -> None:
    things = person.add_subparsers(dest="person_command", metavar="WHAT")
    passkey = things.add_parser("passkey", help="register, list or remove a person's passkeys")
    verbs = passkey.add_subparsers(dest="passkey_command", metavar="VERB")
    add = verbs.add_parser("add", help="open the dashboard's page that registers a passkey in the browser")
    add.add_argument(
        "--url",
        default=DASHBOARD,
        metavar="URL",
        help=f"the dashboard's address (default {DASHBOARD}, as `handrail dashboard` serves it)",
    )
    listing = verbs.add_parser("list", help="the passkeys a person registered")
    remove = verbs.add_parser("remove", help="forget one of a person's passkeys")
    remove.add_argument("credential", metavar="ID", help="the passkey's id, as `list` shows it")
    for verb in (listing, remove):
        verb.add_argument(
            "--as",
            dest="person",
            default=LOCAL_OWNER,
            metavar="NAME",
            help=f"whose passkeys (default `{LOCAL_OWNER}`, the person of a dashboard without tokens)",
        )
        add_database_option(verb)
    person.set_defaults(person_parser=person)


def person_command(args: argparse.Namespace) -> int:
    verb = getattr(args, "passkey_command", None)
    if getattr(args, "person_command", None) != "passkey" or verb is None:
        args.person_parser.print_help(sys.stderr)
        return EXIT_USAGE
    if verb == "add":
        page = args.url.rstrip("/") + "/passkeys"
        print(f"Register a passkey on {page} (start `handrail dashboard` first if it is not running).")
        if sys.stdin.isatty() and sys.stdout.isatty():
            import webbrowser  # lazy: only a person at a terminal is sent to the page

            webbrowser.open(page)
        return EXIT_OK
    from handrail.cli.record import with_existing  # lazy: the store loads only when asked

    return with_existing(args, f"person passkey {verb}", lambda store: _passkeys(store, args, verb))


def _passkeys(store: RunStore, args: argparse.Namespace, verb: str) -> int:
    """`list` or `remove` on the open store."""
    if verb == "list":
        keys = store.passkeys(args.person)
        for key in keys:
            print(f"{key.credential_id}  {key.name}  for {key.rp_id}  since {key.created_at}")
        print(f"{len(keys)} passkey{'' if len(keys) == 1 else 's'} of {args.person}")
        return EXIT_OK
    if store.remove_passkey(args.person, args.credential):
        print(f"removed passkey {args.credential} of {args.person}")
        return EXIT_OK
    print(
        f"handrail person passkey remove: {args.person} has no passkey `{args.credential}` "
        "(`handrail person passkey list` shows them)",
        file=sys.stderr,
    )
    return EXIT_ERRORS
