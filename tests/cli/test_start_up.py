"""What `handrail start` loads before it answers `initialize`: the modules that answer
needs and no others, so that a new import on the start-up path fails here, naming it.
Run as an MCP client runs the server, a process of its own through `handrail.entry`,
in a home of its own with no run database yet."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.environment import child_env
from tests.helpers.server import INITIALIZE

pytestmark = pytest.mark.slow

# Every handrail module loaded when the first answer goes out, by package. A change that
# adds one here says why `initialize` needs it; one it no longer loads leaves the list.
# The run operations (runs.core and what it loads, the store's rows) are made on first
# use: with no run database, `initialize` has no run to tell of, so nothing of runs/ is
# loaded (the request and the approval values it carries are the kernel's).
START_UP = {
    "top level": {
        "",
        "_resources",
        "entry",
        "home",
        "internals",  # the command line reads argparse's tree of parsers through it
        "lazy",
        "settings",
    },
    "cli": {
        "cli",
        "cli.notify_options",
        "cli.oidc_options",
        "cli.options",
        "cli.serve",
        "cli.serving",
    },
    "transport": {
        "transport",
        "transport.stdio",
    },
    "protocol": {
        "protocol",
        "protocol.client_requests",
        "protocol.core",
        "protocol.envelope",
        "protocol.revisions",
        "protocol.session",
        "protocol.surface",
        "protocol.surface.subscriptions",
        "protocol.surface.surface",
        "protocol.surface.texts",
        "protocol.surface.tool_methods",
    },
    "service": {
        "service",
        "service.core",
        "service.definitions",
        "service.identifiers",
        "service.portable_schema",
        "service.run_definitions",
        "service.tool_table",
    },
    "notify": {
        "notify",
    },
    "checks": {
        "checks",
        "checks.config",
    },
    "store": {
        "store",
        "store.open",
        "store.urls",
    },
    "catalog": {
        "catalog",
        "catalog.files",
        "catalog.folders",
        "catalog.live",
        "catalog.snapshot",
        "catalog.sources",
    },
    "patterns": {
        "patterns",
        "patterns.caching",
    },
    "model": {
        "model",
        "model.budget",
        "model.codec",
        "model.errors",
        "model.limits",
        "model.request",
        "model.slotted",
        "model.version",
        "model.wide_integers",
    },
    "observe": {
        "observe",
        "observe.logs",
        "observe.observer",
    },
}

PINNED = {("handrail." + name).rstrip(".") for names in START_UP.values() for name in names}

# what the first answer must never wait for: the other commands, the compiler, the
# workflow model and the engine (the workflows are compiled right after it), and the heavy standard modules
# they bring (a webhook's urllib.request alone loaded http.client, email and ssl); the
# approvals' values (with a tool's first call), the git sources' process driver (only
# for a `git+` source), the webhook receivers (only with --notify), the surface's
# occasional methods (resources, prompts, completion, logging: with their first call)
NOT_LOADED = (
    "handrail.model.approvals",
    "handrail.catalog.git_sources",
    "handrail.checks.processes",
    "handrail.notify.targets",
    "handrail.protocol.surface.prompts",
    "handrail.protocol.surface.resources",
    "handrail.service.argument_limits",
    "subprocess",
    "difflib",
    "secrets",
    "handrail.cli.notify",
    "handrail.cli.runs",
    "handrail.cli.catalog",
    "handrail.cli.record",
    "handrail.gate.hook",
    "handrail.runs.core",
    "handrail.store.rows",
    "handrail.compiler",
    "handrail.model.workflow",
    "handrail.engine.next",
    "handrail.expr",
    "handrail.expr.ast",
    "handrail.notify.send",
    "handrail.dashboard",
    "urllib.request",
    "http.client",
    "email",
    "ssl",
    "hashlib",  # a workflow file's revision is CPython's own SHA-256 (internals.sha256)
    "_hashlib",
    "logging",  # with the first record, or right after the first answer (observe/logs.py)
    "jsonschema",
    "fastjsonschema",
    "lark",
    "watchfiles",
    "shutil",  # with bz2 and lzma: the terminal's width is asked only when help is written
    "orjson",  # loaded once the first answer is out; that answer is the standard library's
    "dataclasses",  # with inspect and ast: the start-up path's values are Frozen (model/slotted.py)
    "inspect",
)

# the server answers its first line, then notes every module it has loaded and ends
PROBE = """
import os, sys
sys.argv = ["handrail", "start"]
import handrail.cli.serve as command

def noted(*args):
    with open(OUT, "w") as out:
        out.write("\\n".join(sorted(sys.modules)))
    os._exit(0)

command._after_first_answer = noted  # what start does once its first answer is out
from handrail.entry import main
main()
"""


@pytest.fixture(scope="module")
def first_answer(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, object], set[str]]:
    """`handrail start`'s answer to `initialize`, and every module loaded when it went out."""
    folder = tmp_path_factory.mktemp("start-up")
    out = folder / "modules.txt"
    done = subprocess.run(
        [sys.executable, "-c", PROBE.replace("OUT", repr(str(out)))],
        input=json.dumps(INITIALIZE) + "\n",
        capture_output=True,
        text=True,
        cwd=folder,
        env=child_env(folder),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[0]), set(Path(out).read_text().split("\n"))


def test_the_probe_sees_a_real_answer_to_initialize(first_answer: tuple[dict[str, object], set[str]]) -> None:
    answer, modules = first_answer
    assert answer["id"] == 0 and "instructions" in answer["result"]  # type: ignore[operator]
    assert "handrail.transport.stdio" in modules


def test_handrail_start_loads_exactly_the_modules_its_first_answer_needs(
    first_answer: tuple[dict[str, object], set[str]],
) -> None:
    _, modules = first_answer
    loaded = {name for name in modules if name == "handrail" or name.startswith("handrail.")}
    assert loaded - PINNED == set(), (
        "new on the start-up path: load it after the first answer, or pin it here"
    )
    assert PINNED - loaded == set(), "no longer loaded before the first answer: take it off START_UP"


def test_handrail_start_loads_neither_the_other_commands_nor_the_compiler_nor_a_webhook_client(
    first_answer: tuple[dict[str, object], set[str]],
) -> None:
    _, modules = first_answer
    assert modules & set(NOT_LOADED) == set()


def test_a_start_that_ends_before_its_first_answer_leaves_the_codec_reading_with_orjson(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from handrail.cli import main, serve
    from handrail.model import codec

    during: list[bool] = []

    def refused(args: object) -> int:
        during.append(codec._stdlib_first)
        raise SystemExit(2)  # as a start that refuses its options, or fails, ends

    monkeypatch.setattr(codec, "_orjson", None)  # as in a process that has not loaded it yet
    monkeypatch.setattr(codec, "_stdlib_first", False)
    monkeypatch.setattr(serve, "_start", refused)
    with pytest.raises(SystemExit):
        main(["start"])
    assert during == [True] and not codec._stdlib_first


def test_a_workflow_file_nested_deeper_than_the_stack_is_refused_before_the_first_answer_not_a_crash(
    tmp_path: Path,
) -> None:
    # the quick look at the sources comes before orjson loads (model/codec.stdlib_first)
    flows = tmp_path / "flows"
    flows.mkdir()
    (flows / "deep.json").write_bytes(b'{"id":"deep","steps":' + b"[" * 5_000 + b"]" * 5_000 + b"}")
    bundled = Path(__file__).parents[2] / "workflows" / "coding-task.json"
    (flows / "coding-task.json").write_bytes(bundled.read_bytes())
    done = subprocess.run(
        [sys.executable, "-m", "handrail", "start", "--no-bundled", "--workflows", str(flows)],
        input=json.dumps(INITIALIZE) + "\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=child_env(tmp_path),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout.splitlines()[0])["result"]["instructions"]
    assert "coding-task" in listed and "deep" not in listed
    assert "RecursionError" not in done.stderr
