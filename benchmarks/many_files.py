"""10,000 workflow files: how long until `handrail start` gives its first real answer,
how much memory it holds, how much CPU it burns idle, how long an unknown id takes.

Builds N files in a temporary folder (copies of the bundled workflows under new ids,
so each is a realistic 5-15 KB, plus one broken file), spawns `handrail start
--no-bundled --workflows DIR` and measures, from the spawn: `initialize`, the first
real answer (`workflow_next` of a workflow in the middle of the folder) in wall and in
the server's CPU seconds, `workflow_list`, then `workflow_get` of a known id and of
unknown ones (the did-you-mean search); when the listing reports the broken file (every
file checked); the resident memory once that is done (and its peak); and the CPU
used over `--idle` quiet seconds. Then spawns `handrail serve` on the same folder and
measures when /healthz first answers and when it says 200. `--baseline COMMIT` runs
the same against the source of an earlier commit of this repository (extracted with
`git archive`), in the same run.

    .venv/bin/python -m benchmarks.many_files                 # 10,000 files
    .venv/bin/python -m benchmarks.many_files --files 2000 --baseline e49b36a
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "b", "version": "1"},
    },
}


BROKEN_FILE = "zz-broken.json"  # lists like the others (id, name...), but its step does not compile


def build(folder: Path, count: int) -> list[str]:
    templates = [json.loads(p.read_text("utf-8")) for p in sorted((ROOT / "workflows").glob("*.json"))]
    ids = []
    for index in range(count):
        document = dict(templates[index % len(templates)])
        document["id"] = f"{document['id']}-{index:05d}"
        ids.append(document["id"])
        (folder / f"wf-{index:05d}.json").write_text(json.dumps(document, indent=2), "utf-8")
    broken = dict(templates[0], id="broken-workflow")
    broken["steps"] = [
        {"id": "a", "title": "A", "prompt": "p", "runCondition": {"var": "x", "equals": 1, "and": []}}
    ]
    (folder / BROKEN_FILE).write_text(json.dumps(broken, indent=2), "utf-8")
    return ids


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Client:
    def __init__(self, source: Path, folder: Path) -> None:
        env = server_env(source, folder.parent)
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "handrail", "start", "--no-bundled", "--workflows", str(folder)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=folder.parent,
            env=env,
        )
        self.next_id = 1

    def ask(self, method: str, params: Any = None) -> tuple[float, dict[str, Any]]:
        """Seconds from now until the answer, and the answer."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        sent = time.perf_counter()
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            reply = json.loads(self.proc.stdout.readline())
            if reply.get("id") == self.next_id:
                return time.perf_counter() - sent, reply

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure(source: Path, folder: Path, ids: list[str], idle: float) -> dict[str, Any]:
    client = Client(source, folder)
    try:
        assert client.proc.stdin is not None and client.proc.stdout is not None
        client.proc.stdin.write(json.dumps(INIT).encode() + b"\n")
        client.proc.stdin.flush()
        json.loads(client.proc.stdout.readline())
        initialize = time.perf_counter() - client.started
        _, answer = client.ask("workflow_next", _next(ids[len(ids) // 2]))
        assert "result" in answer, answer
        first = time.perf_counter() - client.started
        first_cpu = _cpu_seconds(client.proc.pid)
        listing_s, listing = client.ask("workflow_list")
        listed = len(listing["result"]["workflows"])
        known, _ = client.ask("workflow_get", {"id": ids[len(ids) // 3]})
        unknown = []
        for name in ("no-such-workflow", "code-reveiw-00042", "zzzz"):
            seconds, reply = client.ask("workflow_get", {"id": name})
            assert reply["error"]["code"] == -32001, reply
            unknown.append(seconds)
        checked = float("nan")
        while time.perf_counter() - client.started < 600:  # until the broken file is reported
            _, reply = client.ask("workflow_list")
            if any(BROKEN_FILE in d["file"] for d in reply["result"]["diagnostics"]):
                checked = time.perf_counter() - client.started
                break
            time.sleep(0.25)
        time.sleep(1.0)  # let any start-up work settle
        rss = _rss_mb(client.proc.pid)
        before = _cpu_seconds(client.proc.pid)
        time.sleep(idle)
        cpu = (_cpu_seconds(client.proc.pid) - before) / idle * 100
        return {
            "initialize_s": round(initialize, 2),
            "first_real_answer_s": round(first, 2),
            "server_cpu_to_first_answer_s": round(first_cpu, 2),
            "workflow_list_ms": round(listing_s * 1000, 1),
            "listed": listed,
            "get_known_ms": round(known * 1000, 1),
            "get_unknown_ms": round(max(unknown) * 1000, 1),
            "all_checked_s": round(checked, 2),
            "rss_mb": round(rss, 1),
            "peak_rss_mb": round(_peak_rss_mb(client.proc.pid), 1),
            "idle_cpu_percent": round(cpu, 2),
        }
    finally:
        client.close()


def _next(workflow_id: str) -> dict[str, Any]:
    return {"workflowId": workflow_id, "completedSteps": []}


def measure_http(source: Path, folder: Path) -> dict[str, Any]:
    """Seconds from spawning `handrail serve` until /healthz answers at all, and until it
    answers 200 (the workflows compiled)."""
    import httpx

    from tests.helpers.http import free_port

    port = free_port()
    env = server_env(source, folder.parent)
    started = time.perf_counter()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "handrail",
            "serve",
            "--no-bundled",
            "--workflows",
            str(folder),
            "--port",
            str(port),
        ],
        cwd=folder.parent,
        env=env,
        stderr=subprocess.DEVNULL,
    )
    answering = None
    try:
        with httpx.Client(timeout=5) as client:
            while time.perf_counter() - started < 300:
                try:
                    status = client.get(f"http://127.0.0.1:{port}/healthz").status_code
                except httpx.TransportError:
                    time.sleep(0.05)
                    continue
                answering = answering or time.perf_counter() - started
                if status == 200:
                    break
                time.sleep(0.05)
        ready = time.perf_counter() - started
        return {"http_port_answers_s": round(answering or float("nan"), 2), "http_ready_s": round(ready, 2)}
    finally:
        stop(proc)


def server_env(source: Path, home: Path) -> dict[str, str]:
    """The environment of a server run from `source`, with `home` as HOME and no workflow
    paths of ours."""
    env = {k: v for k, v in os.environ.items() if k not in ("HANDRAIL_WORKFLOWS", "WORKFLOW_STORAGE_PATH")}
    return env | {"PYTHONPATH": str(source), "HOME": str(home)}


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def baseline_source(commit: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "archive", commit, "src", "grammar", "spec", "workflows"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into / "src"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--idle", type=float, default=5.0, help="seconds of idle CPU measured")
    parser.add_argument("--baseline", metavar="COMMIT", help="also measure this earlier commit")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="handrail-many-"))
    try:
        folder = work / "workflows"
        folder.mkdir()
        ids = build(folder, args.files)
        runs = {"this tree": ROOT / "src"}
        if args.baseline:
            (work / "baseline").mkdir()
            runs[f"baseline {args.baseline}"] = baseline_source(args.baseline, work / "baseline")
        results = {}
        for name, source in runs.items():
            results[name] = measure(source, folder, ids, args.idle) | measure_http(source, folder)
            print(f"{name}: {json.dumps(results[name])}", flush=True)
        print(json.dumps({"files": args.files, "results": results}, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
