"""`handrail init` (a first workflow) and `handrail token` (a person's token)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from handrail.cli.options import EXIT_OK, EXIT_USAGE, invoked_as


def add_init(init: argparse.ArgumentParser) -> None:
    init.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="folder to create (default ~/.handrail/workflows; $HANDRAIL_HOME moves ~/.handrail)",
    )


def add_token(token: argparse.ArgumentParser) -> None:
    token.add_argument("name", metavar="NAME", help="the person the token is for")
    token.add_argument(
        "--scope",
        choices=["agent", "person", "both"],
        default=None,
        help="where the token is good: agent (/mcp only), person (the dashboard and approving), "
        "or both (what a line without a scope means)",
    )
    token.add_argument(
        "--roles",
        default=None,
        metavar="ROLE,...",
        help="the person's roles, e.g. lead,qa (approvers name role:lead)",
    )


def token(args: argparse.Namespace) -> int:
    from handrail.service.people import (  # lazy: loaded when the command runs
        NAME,
        ROLE,
        new_token,
        token_line,
    )
    from handrail.store.base import LOCAL_OWNER  # lazy: loaded when the command runs

    if not NAME.match(args.name):
        print(
            "handrail token: a name is 1 to 64 letters, digits or . _ @ + - "
            "(starting with a letter or digit)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if args.name == LOCAL_OWNER:  # a server would refuse the tokens file holding this line
        print(
            f"handrail token: the name `{LOCAL_OWNER}` is kept for HANDRAIL_TOKEN and runs started "
            "without a token; choose another",
            file=sys.stderr,
        )
        return EXIT_USAGE
    roles = tuple(args.roles.split(",")) if args.roles else ()
    if any(not ROLE.match(role) for role in roles):
        print(
            "handrail token: --roles: each role is 1 to 64 letters, digits or . _ @ + -, split by commas",
            file=sys.stderr,
        )
        return EXIT_USAGE
    token = new_token()
    print(f"token: {token}")
    print(f"line:  {token_line(args.name, token, scope=args.scope, roles=roles)}")
    print(
        f"Give the token to {args.name} (their client sends `Authorization: Bearer <token>`) and "
        "add the line to the tokens file (--tokens); the file then holds only its hash.",
        file=sys.stderr,
    )
    return EXIT_OK


SAMPLE = {
    "$schema": "https://handrail.dev/schemas/workflow/v1.json",
    "id": "my-first-workflow",
    "name": "My First Workflow",
    "description": "A sample: understand a task, then do it and report, with a check on the report.",
    "version": "0.1.0",
    "steps": [
        {
            "id": "understand",
            "title": "Understand the task",
            "prompt": (
                "Restate the task in your own words and list open questions. "
                "When none is left, set `ready` to true in the context."
            ),
        },
        {
            "id": "do-it",
            "title": "Do the work",
            "prompt": "Carry out the task.",
            "runCondition": "ready == true",  # `check` warns (H307) when no text asks for it
        },
        {
            "id": "report",
            "title": "Report",
            "prompt": "Summarise what you did and how you checked it.",
            "runCondition": "ready == true",  # as the work's: a report never comes before the work
            "validationCriteria": [
                {"type": "length", "min": 40, "message": "The report needs a few sentences"}
            ],
        },
    ],
}


def init(args: argparse.Namespace) -> int:
    from handrail.home import workflows_folder  # lazy: loaded when the command runs

    folder: Path = args.dir or workflows_folder()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / "my-first-workflow.json"
        if target.exists():
            print(f"{target} already exists; left as it is.")
        else:
            target.write_text(json.dumps(SAMPLE, indent=2) + "\n", encoding="utf-8")
            print(f"created {target}")
    except OSError as exc:
        why = exc.strerror or exc
        print(f"handrail init: cannot create {exc.filename or folder}: {why}", file=sys.stderr)
        return EXIT_USAGE
    typed, spawned = invoked_as()
    read = "" if args.dir is None else f" --workflows {folder}"  # the home's workflows are read anyway
    print(
        "\nNext:\n"
        f"  {typed} check {folder}    # see that it compiles\n"
        f"  {typed} walk my-first-workflow{read}    # try it in the terminal, as an agent would\n"
        f"  {typed} list{read}    # see every workflow the server will offer\n"
        f"  claude mcp add handrail -- {spawned} start{read}    # or any client: see the README"
    )
    return EXIT_OK
