"""What a hook process loads and how it opens the store: the one store, which upgrades
an older schema and refuses a newer one (so the gate never writes to it), read with
nothing of the layers a hook does not use. Run as Claude Code and git run the hook:
a process of its own, through `handrail.entry`."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from handrail.gate.hook_store import locate
from handrail.home import database_file, handrail_home
from handrail.store.open import default_url
from handrail.store.schema import MIGRATIONS
from handrail.store.urls import sqlite_path
from tests.gate.runs import GateWorld, claude_input

# what a hook never loads: the command table, the server and its protocol, the
# workflow compiler, model and engine, the catalog, the notifier, and the libraries
# only they need (the MCP SDK, pydantic, lark, the HTTP stack; shutil's compression
# modules)
NOT_LOADED = (
    "handrail.cli",
    "handrail.model.workflow",
    "handrail.notify",
    "handrail.runs.approvers",
    "shutil",
    "handrail.service",
    "handrail.transport",
    "handrail.protocol",
    "handrail.dashboard",
    "handrail.compiler",
    "handrail.engine",
    "handrail.catalog",
    "handrail.checks",
    "mcp",
    "pydantic",
    "pydantic_core",
    "lark",
    "httpx",
    "anyio",
    "starlette",
    "uvicorn",
    "psycopg",
    # what only a server's store calls need: claims, passkeys, dashboard sessions, and a
    # request's budget (store/sqlite.py imports them where they are used)
    "handrail.store.claims",
    "handrail.store.passkeys",
    "handrail.store.sessions",
    "handrail.model.budget",
    # what answers a hook that cannot judge: loaded only when one cannot
    "handrail.gate.hook_failures",
    # orjson, and what it imports to encode them: a refusal's record is written with json
    # (codec.encode_stored), and the store's records are NamedTuples, not dataclasses
    "orjson",
    "uuid",
    "platform",
    "dataclasses",
    "inspect",
    # pathlib (and urllib.parse, which it loads): the default store is a file named by
    # handrail's home, opened as a path; OpenSSL's hashlib: the seal's SHA-256 is Python's own
    "pathlib",
    "urllib.parse",
    "hashlib",
    "_hashlib",
    # threading: a hook starts no thread; the stores' locks are _thread's (handrail.internals)
    "threading",
)

# what a hook that writes nothing (an allowed call of a bound run) does not load either: the statistics'
# summary a write plans, the ledger that writes, the server's limits
NOT_LOADED_BY_A_READ = (
    "handrail.store.summary",
    "handrail.store.stats",
    "handrail.runs.ledger",
    "handrail.model.limits",
)

# what a hook that writes (a refusal's record) does not load either: the statistics'
# queries (the summary a write plans needs them only for a failed check's output)
NOT_LOADED_BY_A_WRITE = ("handrail.store.stats", "handrail.store.stats_sql")


# the hook ends its process with os._exit once it has answered: the probe notes the
# modules loaded then, and ends it the same way
PROBE = """
import os, sys
sys.argv = ["handrail", *sys.argv[1:]]
end = os._exit

def noted(code):
    with open(OUT, "w") as out:
        out.write("\\n".join(sorted(sys.modules)))
    end(code)

os._exit = noted
from handrail.entry import main
noted(main())
"""

# the same, counting what typing compiles: a NamedTuple's or TypedDict's annotation it
# cannot take as it is (a string), each a compile(), the first of which alone costs about
# 10M instructions (Python's AST types made)
COUNTING = """
import builtins, os, sys
sys.argv = ["handrail", *sys.argv[1:]]
end, real = os._exit, builtins.compile
compiled = []

def counted(source, filename, *args, **kwargs):
    if filename == "<string>":
        compiled.append(source)
    return real(source, filename, *args, **kwargs)

def noted(code):
    with open(OUT, "w") as out:
        out.write("\\n".join(map(str, compiled)))
    end(code)

builtins.compile = counted
os._exit = noted
from handrail.entry import main
noted(main())
"""


# the NamedTuples still made on a hook's path (a NamedTuple costs about 700K instructions to
# make, a class of slots, handrail.model.slotted, about 70K): the run's record and the event
# rows, which the store compares, indexes and writes as rows, the compiler's findings
# (unpacked), the settings and limits, the summary's marks (kept as a JSON array), the HTTP hook's judgement
NAMED_TUPLES = {
    "handrail.model.errors.Finding",
    "handrail.model.limits._Limits",
    "handrail.model.limits.Limits",
    "handrail.model.limits.TransportLimits",
    "handrail.model.runs.RunRecord",
    "handrail.runs.gate_store.Judged",
    "handrail.settings.Settings",
    "handrail.store.chain.EventRow",
    "handrail.store.summary.Marks",
}

# the same, noting the NamedTuple classes of handrail's loaded modules
NAMING = PROBE.replace(
    'out.write("\\n".join(sorted(sys.modules)))',
    'out.write("\\n".join(f"{k.__module__}.{k.__qualname__}" for m in list(sys.modules.values())'
    ' if m.__name__.startswith("handrail") for k in vars(m).values()'
    ' if isinstance(k, type) and issubclass(k, tuple) and hasattr(k, "_fields")'
    " and k.__module__ == m.__name__))",
)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[GateWorld]:
    found = GateWorld(tmp_path)
    found.start("plan")
    yield found
    found.close()


def loaded(
    world: GateWorld, args: list[str], stdin: str
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """The hook's answer, and every module its process had loaded when it answered."""
    done, lines = probe_run(world, PROBE, args, stdin)
    return done, set(lines)


def test_a_denied_edit_and_a_commit_make_no_named_tuple_but_those_the_store_keeps(world: GateWorld) -> None:
    edit = claude_input(world, "PreToolUse", tool_name="Edit", tool_input={"file_path": "src/cart.py"})
    for args, stdin in (
        (["gate", "pre-tool-use", "--harness", "claude-code"], edit),
        (["gate", "pre-commit", "--harness", "git"], ""),
    ):
        made = set(probed(world, NAMING, args, stdin))
        assert "handrail.model.runs.RunRecord" in made  # the probe sees the NamedTuples made
        assert made - NAMED_TUPLES == set()
    assert world.gate_events()[-1]["decision"] == "deny"


def compiled(world: GateWorld, args: list[str], stdin: str) -> list[str]:
    """What typing compiled while the hook ran to its answer."""
    return probed(world, COUNTING, args, stdin)


def probed(world: GateWorld, probe: str, args: list[str], stdin: str) -> list[str]:
    """The lines a probe (a program writing to OUT as the hook runs) wrote."""
    return probe_run(world, probe, args, stdin)[1]


def probe_run(
    world: GateWorld, probe: str, args: list[str], stdin: str
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """The hook run under `probe`: its answer, and the lines the probe wrote to OUT."""
    out = world.root / "probed.txt"
    done = subprocess.run(
        [sys.executable, "-c", probe.replace("OUT", repr(str(out))), *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=world.workspace,
        env=world.env(),
        timeout=60,
    )
    return done, [line for line in out.read_text().split("\n") if line]


def test_a_hook_s_value_types_make_typing_compile_nothing_as_it_reads_or_writes(world: GateWorld) -> None:
    read = claude_input(world, "PreToolUse", tool_name="Read", tool_input={"file_path": "src/cart.py"})
    edit = claude_input(world, "PreToolUse", tool_name="Edit", tool_input={"file_path": "src/cart.py"})
    claude = ["gate", "pre-tool-use", "--harness", "claude-code"]
    assert compiled(world, claude, read) == []
    assert compiled(world, claude, edit) == []  # a refusal, recorded through the ledger
    assert compiled(world, ["gate", "pre-commit", "--harness", "git"], "") == []
    assert world.gate_events()[-1]["decision"] == "deny"


def test_a_denied_edit_is_decided_and_recorded_loading_no_layer_a_hook_does_not_use(world: GateWorld) -> None:
    edit = claude_input(world, "PreToolUse", tool_name="Edit", tool_input={"file_path": "src/cart.py"})
    done, modules = loaded(world, ["gate", "pre-tool-use", "--harness", "claude-code"], edit)
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny", done.stderr
    assert modules & {*NOT_LOADED, *NOT_LOADED_BY_A_WRITE} == set()
    assert world.gate_events()[-1]["decision"] == "deny"


def test_an_allowed_read_and_a_git_commit_load_no_layer_a_hook_does_not_use(world: GateWorld) -> None:
    read = claude_input(world, "PreToolUse", tool_name="Read", tool_input={"file_path": "src/cart.py"})
    done, modules = loaded(world, ["gate", "pre-tool-use", "--harness", "claude-code"], read)
    assert (done.returncode, done.stdout) == (0, "")
    assert modules & set(NOT_LOADED) == set()
    done, modules = loaded(world, ["gate", "pre-commit", "--harness", "git"], "")
    assert done.returncode == 1 and "step 'plan'" in done.stderr
    assert modules & set(NOT_LOADED) == set()


def test_a_bound_run_s_allowed_read_writes_nothing_and_loads_nothing_writes_need(world: GateWorld) -> None:
    read = claude_input(world, "PreToolUse", tool_name="Read", tool_input={"file_path": "src/cart.py"})
    world.gate("pre-tool-use", read)  # the session binds the run: a write
    events = len(world.events())
    done, modules = loaded(world, ["gate", "pre-tool-use", "--harness", "claude-code"], read)
    assert (done.returncode, done.stdout) == (0, "")
    assert "handrail.store.sqlite" in modules  # the one store, read with json
    assert modules & {*NOT_LOADED, *NOT_LOADED_BY_A_READ} == set()
    assert len(world.events()) == events


def test_a_store_of_a_newer_schema_is_refused_by_name_and_never_written(world: GateWorld) -> None:
    world.close()
    newer = len(MIGRATIONS) + 1
    with sqlite3.connect(world.database) as db:
        db.execute("INSERT INTO schema_migrations VALUES (?, 'later')", (newer,))
        events = db.execute("SELECT COUNT(*) FROM run_events").fetchone()[0]
    edit = claude_input(world, "PreToolUse", tool_name="Edit", tool_input={"file_path": "src/cart.py"})
    done = world.gate("pre-tool-use", edit, "--on-error", "deny")
    assert f"has schema version {newer}, newer than this handrail knows" in done.stderr
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    with sqlite3.connect(world.database) as db:
        assert db.execute("SELECT COUNT(*) FROM run_events").fetchone()[0] == events


def test_a_store_without_a_schema_yet_is_opened_by_the_full_store(tmp_path: Path) -> None:
    world = GateWorld(tmp_path)
    sqlite3.connect(world.database).close()  # an empty file: the full store creates the tables
    edit = claude_input(world, "PreToolUse", tool_name="Edit", tool_input={"file_path": "src/cart.py"})
    done = world.gate("pre-tool-use", edit, "--require-run", "gate-fixture")
    assert "no run is active in this workspace" in done.stdout, done.stderr
    with sqlite3.connect(world.database) as db:
        assert db.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] == len(MIGRATIONS)


def test_a_wrong_hook_option_is_worded_by_argparse(world: GateWorld) -> None:
    done = world.gate("stop", "{}", "--stop-limit", "9")
    assert done.exit_code == 2 and "'9' is not a stop limit from 1 to 7" in done.stderr


def test_a_damaged_store_fails_the_hook_s_call_with_one_line_and_is_left_as_it_was(world: GateWorld) -> None:
    world.close()
    page = 4096
    with sqlite3.connect(world.database) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page = db.execute("PRAGMA page_size").fetchone()[0]
    data = bytearray(world.database.read_bytes())
    data[page:] = bytes([0xA5]) * (len(data) - page)  # every page but the first, the schema's
    world.database.write_bytes(bytes(data))
    edit = claude_input(world, "PreToolUse", tool_name="Edit", tool_input={"file_path": "src/cart.py"})
    # no hook saw the run before the damage: the gate cannot know one is active (spec/gate.md)
    allowed = world.gate("pre-tool-use", edit)
    said = allowed.json()["systemMessage"]
    assert allowed.exit_code == 0 and "cannot judge this (the run database" in said and "damaged" in said
    assert "Traceback" not in allowed.stderr
    assert "malformed" in allowed.stderr or "damaged" in allowed.stderr
    refused = world.gate("pre-tool-use", edit, "--on-error", "deny")
    assert json.loads(refused.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert world.database.read_bytes() == bytes(data)


@pytest.mark.parametrize("named", [None, "", "~/elsewhere", "relative/home", "/abs/home/"])
def test_the_hook_finds_the_home_and_database_where_the_store_does(
    named: str | None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HANDRAIL_DATABASE_URL", raising=False)
    if named is None:
        monkeypatch.delenv("HANDRAIL_HOME", raising=False)
    else:
        monkeypatch.setenv("HANDRAIL_HOME", named)
    place = locate(None)
    assert place.home == str(handrail_home())
    assert place.sqlite_file == str(database_file()) == str(sqlite_path(default_url()))
    given = locate("sqlite:///" + str(tmp_path / "x y.db").lstrip("/"))
    assert given.sqlite_file == str(tmp_path / "x y.db")
