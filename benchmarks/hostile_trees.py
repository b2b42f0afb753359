"""Hostile workflow folders: a seeded generator of trees, and a run against `handrail start`.

    python -m benchmarks.hostile_trees                  # 20 trees
    python -m benchmarks.hostile_trees --trees 200 --seed 7

Each tree mixes good workflows with what a careless or hostile author (or a tool) may
leave in a watched folder: links to files and folders inside and outside, link loops
(to themselves, in pairs, to a parent folder), names that are not UTF-8 or hold
newlines, spaces, quotes and very long parts, FIFOs, sockets-in-waiting, empty and
broken files, a file over the size limit, JSON nested thousands deep, folders nested
past the depth limit, and files rewritten while the server reads them.

For each tree a real `handrail start` serves it while a thread keeps changing it (new
loops, files replaced by FIFOs, renames, rewrites). The property: every request gets
one well-formed answer within HANG_SECONDS, none is an internal error (-32603), every
listed workflow can be fetched and started, and the server is still up at the end.
tests/reliability/test_hostile_trees.py runs a few seeds of the same generator.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HANG_SECONDS = 10.0
INTERNAL_ERROR = -32603


def workflow(wid: str) -> dict[str, Any]:
    return {
        "id": wid,
        "name": f"Workflow {wid}",
        "description": "Generated.",
        "version": "1.0.0",
        "steps": [
            {"id": "one", "title": "One", "prompt": "Do one."},
            {"id": "two", "title": "Two", "prompt": "Do two.", "runCondition": {"var": "go", "equals": True}},
        ],
    }


def _name(rng: random.Random) -> str:
    """A file name stem: plain, or odd in one of the ways real folders are."""
    kind = rng.randrange(8)
    if kind == 0:
        return os.fsdecode(b"bytes-\xff\xfe-" + bytes([rng.randrange(0x80, 0x100)]))
    if kind == 1:
        return "line\nbreak"
    if kind == 2:
        return "spaces and 'quotes' \"too\""
    if kind == 3:
        return "x" * rng.randrange(100, 240)
    if kind == 4:
        return "ünïcødé-名前-🙂"
    return f"wf-{rng.randrange(10**6)}"


def build(root: Path, rng: random.Random, outside: Path) -> None:
    """Fill `root` (which exists) with a hostile tree."""
    folders = [root]
    for _ in range(rng.randrange(1, 5)):
        sub = rng.choice(folders) / f"sub-{rng.randrange(1000)}"
        sub.mkdir(exist_ok=True)
        folders.append(sub)
    makers = [
        _good,
        _good,
        _good,
        _broken,
        _link_to_file,
        _link_loop,
        _link_to_parent,
        _link_outside,
        _dangling,
        _fifo,
        _too_large,
        _deeply_nested_json,
        _deep_folders,
    ]
    for index in range(rng.randrange(8, 25)):
        folder = rng.choice(folders)
        with contextlib.suppress(OSError):
            rng.choice(makers)(folder, rng, index, outside)


def _good(folder: Path, rng: random.Random, index: int, outside: Path) -> None:
    wid = f"good-{index}-{rng.randrange(10**6)}"
    (folder / f"{_name(rng)}-{index}.json").write_text(json.dumps(workflow(wid)), "utf-8")


def _broken(folder: Path, rng: random.Random, index: int, outside: Path) -> None:
    text = json.dumps(workflow(f"broken-{index}"))
    cut = rng.choice([b"", text.encode()[: rng.randrange(1, len(text))], b"\xff\xfe", b"{" * 5000])
    (folder / f"{_name(rng)}-broken-{index}.json").write_bytes(cut)


def _link_to_file(folder: Path, rng: random.Random, index: int, outside: Path) -> None:
    target = folder / f"target-{index}.json"
    target.write_text(json.dumps(workflow(f"linked-{index}")), "utf-8")
    os.symlink(target.name, folder / f"link-{index}.json")


def _link_loop(folder: Path, rng: random.Random, index: int, outside: Path) -> None:
    a, b = folder / f"loop-{index}-a.json", folder / f"loop-{index}-b.json"
    os.symlink(b.name, a)
    os.symlink(a.name, b)
    os.symlink(f"self-{index}", folder / f"self-{index}")


def _link_to_parent(folder: Path, rng: random.Random, index: int, outside: Path) -> None:
    os.symlink("..", folder / f"up-{index}")
    os.symlink(".", folder / f"here-{index}.json")


def _link_outside(folder: Path, rng: random.Random, index: int, outside: Path) -> None:
    os.symlink(outside, folder / f"out-{index}")
    os.symlink(outside / "secret.json", folder / f"out-{index}.json")


def _dangling(folder: Path, rng: random.Random, index: int, outside: Path) -> None:
    os.symlink(f"nowhere-{index}.json", folder / f"dangling-{index}.json")


def _fifo(folder: Path, rng: random.Random, index: int, outside: Path) -> None:
    os.mkfifo(folder / f"fifo-{index}.json")


def _too_large(folder: Path, rng: random.Random, index: int, outside: Path) -> None:
    (folder / f"large-{index}.json").write_bytes(b" " * 1_100_000 + b"{}")


def _deeply_nested_json(folder: Path, rng: random.Random, index: int, outside: Path) -> None:
    depth = rng.choice([500, 5000, 50_000])
    (folder / f"nested-{index}.json").write_text("[" * depth + "]" * depth, "utf-8")


def _deep_folders(folder: Path, rng: random.Random, index: int, outside: Path) -> None:
    deep = folder
    for _ in range(rng.randrange(30, 45)):
        deep = deep / "d"
    deep.mkdir(parents=True, exist_ok=True)
    (deep / "deep.json").write_text(json.dumps(workflow(f"deep-{index}")), "utf-8")


def churn(root: Path, rng: random.Random, stop: threading.Event, outside: Path) -> None:
    """Keep changing the tree while it is served: rewrites (a file read half-written),
    new loops, files swapped for FIFOs, renames, deletions."""
    step = 0
    while not stop.wait(0.02):
        step += 1
        with contextlib.suppress(OSError):
            files = [p for p in root.rglob("*.json") if p.is_file() and not p.is_symlink()]
            kind = rng.randrange(6)
            if kind == 0 or not files:
                _good(root, rng, 10_000 + step, outside)
            elif kind == 1:
                path = rng.choice(files)
                text = path.read_bytes()
                path.write_bytes(text[: len(text) // 2])  # caught half-written
                path.write_bytes(text)
            elif kind == 2:
                _link_loop(root, rng, 10_000 + step, outside)
            elif kind == 3:
                path = rng.choice(files)
                path.unlink()
                os.mkfifo(path)
            elif kind == 4:
                path = rng.choice(files)
                path.rename(path.with_name(_name(rng) + ".json"))
            else:
                rng.choice(files).unlink()


class Server:
    """`handrail start` over pipes, one request at a time, each with a deadline."""

    def __init__(self, folder: Path, home: Path) -> None:
        import subprocess

        env = {
            k: v for k, v in os.environ.items() if k not in ("HANDRAIL_WORKFLOWS", "WORKFLOW_STORAGE_PATH")
        }
        env["HOME"] = str(home)
        env["PYTHONPATH"] = str(ROOT / "src")
        self.proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "handrail", "start", "--no-bundled", "--reload-interval", "0.05"),
                "--workflows",
                str(folder),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=home,
            env=env,
        )
        self.replies: dict[int, Any] = {}
        self.arrived = threading.Condition()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in iter(self.proc.stdout.readline, b""):
            message = json.loads(raw)  # a line that is not JSON fails the run loudly
            if "id" in message:
                with self.arrived:
                    self.replies[message["id"]] = message
                    self.arrived.notify_all()

    def ask(self, method: str, params: Any = None) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.next_id += 1
        rid = self.next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        with self.arrived:
            if not self.arrived.wait_for(lambda: rid in self.replies, HANG_SECONDS):
                raise AssertionError(f"{method} not answered within {HANG_SECONDS}s (alive: {self.alive})")
            reply: dict[str, Any] = self.replies.pop(rid)
        error = reply.get("error")
        assert error is None or error["code"] != INTERNAL_ERROR, f"{method} {params}: {reply}"
        return reply

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except Exception:
            self.proc.kill()
            self.proc.wait()


def exercise(seed: int, rounds: int = 5) -> int:
    """Build one tree, serve it while it churns, ask about everything; the number of
    requests answered. Raises AssertionError on a property violation."""
    rng = random.Random(seed)
    work = Path(tempfile.mkdtemp(prefix="handrail-tree-"))
    stop = threading.Event()
    try:
        root, outside, home = work / "wf", work / "outside", work / "home"
        for folder in (root, outside, home):
            folder.mkdir()
        (outside / "secret.json").write_text(json.dumps(workflow("secret")), "utf-8")
        build(root, rng, outside)
        server = Server(root, home)
        answered = 0
        try:
            init = {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "f", "version": "1"},
            }
            server.ask("initialize", init)
            answered += 1
            churner = threading.Thread(target=churn, args=(root, random.Random(seed + 1), stop, outside))
            churner.start()
            for _ in range(rounds):
                time.sleep(0.3)  # let the churn be seen
                listing = server.ask("workflow_list")["result"]
                answered += 1
                ids = [w["id"] for w in listing["workflows"]]
                assert "secret" not in ids, "a link leading outside the source was followed"
                json.dumps(listing["diagnostics"])  # every path printable
                for wid in ids[:10]:
                    for method, params in (
                        ("workflow_get", {"id": wid}),
                        ("workflow_next", {"workflowId": wid, "completedSteps": []}),
                    ):
                        server.ask(method, params)  # found, or not found since a churn: never a crash
                        answered += 1
                server.ask("workflow_get", {"id": "no-such-workflow"})
                answered += 1
            stop.set()
            churner.join(10)
            server.ask("ping")
            answered += 1
            assert server.alive, "the server exited"
        finally:
            stop.set()
            server.close()
        return answered
    finally:
        stop.set()
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trees", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    started = time.monotonic()
    answered, failures = 0, []
    for seed in range(args.seed, args.seed + args.trees):
        try:
            answered += exercise(seed)
        except AssertionError as exc:
            failures.append(f"seed {seed}: {exc}")
    print(
        f"trees {args.trees}  requests answered {answered}  failures {len(failures)}  "
        f"({time.monotonic() - started:.0f} s)"
    )
    for failure in failures[:10]:
        print("  " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
