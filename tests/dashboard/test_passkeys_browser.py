"""Passkeys in a real headless Chromium with a virtual authenticator (the DevTools
WebAuthn domain): a person registers one, approves a run the gate watches with it,
and the approval's signature over the chain head is what `runs verify` checks. The
agent's ways to the same approval, the command line and a bare HTTP client on the
tokenless dashboard, are refused. A run whose workflow leaves ending it to a person is
abandoned the same way, with the person's passkey on its page."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from handrail.store.chain_form import event_hash, hashed_form
from handrail.store.state_seal import reseal
from tests.gate.runs import GateWorld, claude_input
from tests.helpers.http import HttpServer

pytestmark = pytest.mark.slow

AUTHENTICATOR = {
    "protocol": "ctap2",
    "transport": "internal",
    "hasResidentKey": True,
    "hasUserVerification": True,
    "isUserVerified": True,
}


def waiting_watched_run(world: GateWorld, server: HttpServer) -> str:
    """A run of the gate fixture at its `release` step, waiting for approval, with a
    Claude Code session of the agent bound to it by the gate."""
    args = {"workflowId": "gate-fixture", "goal": "Add a discount", "workspace": str(world.workspace)}
    run: str = server.rpc("tools/call", {"name": "workflow_start", "arguments": args})["result"][
        "structuredContent"
    ]["runId"]
    world.run_id = run
    for step in ("plan", "implement", "test", "release"):
        done = server.rpc(
            "tools/call",
            {
                "name": "workflow_continue",
                "arguments": {"runId": run, "stepId": step, "output": f"{step} done"},
            },
        )
        assert "error" not in done, done
    read = {"file_path": str(world.workspace / "README.md")}
    hook = claude_input(world, "PreToolUse", tool_name="Read", tool_input=read)
    assert server.client.post(f"{server.base}/hooks/claude-code", content=hook).status_code == 200
    assert any(e["type"] == "gate" for e in world.events()), "the gate did not see the run"
    return run


def started_unwatched(world: GateWorld, server: HttpServer) -> str:
    """A second run at `release`, waiting for approval, in a folder no gate watches."""
    folder = world.root / "elsewhere"
    folder.mkdir()
    args = {"workflowId": "gate-fixture", "goal": "Elsewhere", "workspace": str(folder)}
    reply = server.rpc("tools/call", {"name": "workflow_start", "arguments": args})
    run: str = reply["result"]["structuredContent"]["runId"]
    for step in ("plan", "implement", "test", "release"):
        arguments = {"runId": run, "stepId": step, "output": f"{step} done"}
        assert "error" not in server.rpc("tools/call", {"name": "workflow_continue", "arguments": arguments})
    return run


def status(world: GateWorld, run: str) -> str:
    store = sqlite3.connect(world.database)
    try:
        return str(store.execute("SELECT status FROM runs WHERE id = ?", (run,)).fetchone()[0])
    finally:
        store.close()


def handrail(
    world: GateWorld, *argv: str, program: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(program or [sys.executable, "-m", "handrail"]), *argv],
        capture_output=True,
        text=True,
        env=world.env(),
        cwd=world.workspace,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def bare_post(base: str, run: str, verb: str = "appr%6Fve") -> httpx.Response:
    """What an agent's curl does on the tokenless dashboard: sign in with an empty token,
    scrape the form's CSRF value, post the approval (or `verb`) with the path spelled encoded."""
    with httpx.Client(base_url=base, timeout=15) as client:
        client.post("/signin", data={"token": ""}, headers={"Origin": base})
        page = client.get(f"/runs/{run}").text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page)
        assert csrf is not None, page
        return client.post(
            f"/runs/{run}/{verb}",
            data={"csrf": csrf.group(1), "comment": "lgtm"},
            headers={"Origin": base},
            follow_redirects=False,
        )


def rewrite_from_the_start(world: GateWorld, run: str) -> None:
    """Someone with the store changes the first event's goal and computes every hash,
    the head and the row's seal again: neither the chain nor the seal holds a secret."""
    db = sqlite3.connect(world.database)
    try:
        rows = db.execute(
            "SELECT seq, type, at, actor, step_id, data FROM run_events WHERE run_id = ? ORDER BY seq", (run,)
        ).fetchall()
        prev = None
        for seq, kind, at, actor, step_id, text in rows:
            data = json.loads(text)
            if seq == 1:
                data["goal"] = "Remove the discount"
                text = json.dumps(data)
            prev = event_hash(hashed_form(run, seq, kind, at, actor, step_id, data, prev))
            db.execute(
                "UPDATE run_events SET data = ?, hash = ? WHERE run_id = ? AND seq = ?",
                (text, prev, run, seq),
            )
        (sealed,) = db.execute("SELECT seal FROM runs WHERE id = ?", (run,)).fetchone()
        db.execute(
            "UPDATE runs SET head = ?, seal = ? WHERE id = ?", (prev, reseal(sealed, prev, len(rows)), run)
        )
        db.commit()
    finally:
        db.close()


def test_a_run_the_gate_watches_is_approved_only_with_the_persons_passkey_whose_signature_verify_checks(
    world: GateWorld, page: Any
) -> None:
    args = ("--no-bundled", "--workflows", str(world.workflows), "--database", world.url)
    with HttpServer(*args, env={"HANDRAIL_HOME": str(world.handrail_home)}) as server:
        local = f"http://localhost:{server.port}"
        # the person registers a passkey once, before an agent works on the machine
        cdp = page.context.new_cdp_session(page)
        cdp.send("WebAuthn.enable")
        cdp.send("WebAuthn.addVirtualAuthenticator", {"options": AUTHENTICATOR})
        page.goto(f"{local}/passkeys")
        page.fill("#passkey-name", "laptop")
        page.click("#add-passkey")
        assert page.locator("#note").inner_text() == "Passkey registered."
        assert "laptop" in page.locator("#passkey-list").inner_text()

        run = waiting_watched_run(world, server)

        # the agent's ways: both spellings of the command, and a bare HTTP client
        program = [str(Path(sys.executable).parent / "handrail")]
        for spelled in (program, None):
            refused = handrail(world, "runs", "approve", run, "--database", world.url, program=spelled)
            assert refused.returncode == 1, refused.stdout
            assert "needs the person's passkey" not in refused.stdout
            assert "presence: the gate watches this run" in refused.stderr
            assert f"/runs/{run}" in refused.stderr
        posted = bare_post(server.base, run)
        assert posted.status_code == 303 and f"/runs/{run}/sign?" in posted.headers["location"]
        scripted = httpx.post(f"{server.base}/api/runs/{run}/approve", timeout=15)  # no token asked
        assert scripted.status_code == 403, scripted.text  # (not a channel here without tokens)
        assert status(world, run) == "awaiting_approval"

        # the passkey the person registered, now refused to anyone while an agent works
        page.goto(f"{local}/passkeys")
        page.click("#add-passkey")
        refusal = page.locator("#register-error", has_text="while the gate watches run")
        refusal.wait_for(timeout=15_000)  # the page writes it when the refusal arrives
        page.errors.clear()  # the refused request is logged by the browser

        # the approval signed with the person's passkey
        page.goto(f"{local}/runs/{run}")
        page.fill("#comment", "Ship it")
        page.click("#approve")
        page.locator("#sign").wait_for()
        assert "the gate watches this run" in page.locator("#presence").inner_text()
        page.click("#sign")
        assert page.locator(".note").inner_text() == "Approved."

        # a person with a passkey is asked for it on every dashboard decision, watched or not
        other = started_unwatched(world, server)
        page.goto(f"{local}/runs/{other}")
        page.click("#decline")
        page.locator("#sign").wait_for()
        assert "local registered a passkey" in page.locator("#presence").inner_text()
        page.click("#sign")
        assert page.locator(".note").inner_text() == "Declined."
        assert page.errors == []

    assert status(world, run) == "completed"
    approved = next(e for e in world.events() if e["type"] == "approved")
    presence = approved["presence"]
    assert presence["method"] == "passkey" and presence["rpId"] == "localhost"
    assert set(presence["credential"]["response"]) >= {"authenticatorData", "clientDataJSON", "signature"}
    assert approved["comment"] == "Ship it"
    db = sqlite3.connect(world.database)
    try:
        seq = approved["seq"] - 1
        head = db.execute("SELECT hash FROM run_events WHERE run_id = ? AND seq = ?", (run, seq)).fetchone()
    finally:
        db.close()
    assert presence["head"] == head[0]  # the chain's head when the person signed

    verified = handrail(world, "runs", "verify", run, "--database", world.url)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "verified" in verified.stdout

    exported = world.root / "record.json"
    done = handrail(world, "runs", "export", run, "--database", world.url, "--output", str(exported))
    assert done.returncode == 0, done.stderr
    offline = handrail(world, "runs", "verify", "--file", str(exported), "--database", world.url)
    assert offline.returncode == 0, offline.stdout + offline.stderr
    assert "1 passkey signature checked against the registered keys" in offline.stdout

    rewrite_from_the_start(world, run)
    broken = handrail(world, "runs", "verify", run, "--database", world.url)
    assert broken.returncode == 1
    assert f"BROKEN at event {approved['seq']}" in broken.stdout
    assert "the log before it was rewritten" in broken.stdout


def watched_run_only_a_person_ends(world: GateWorld, server: HttpServer) -> str:
    """A run of the gate fixture (whose workflow says `"abandon": "person"`) at its
    `implement` step, a Claude Code session of the agent bound to it by the gate."""
    args = {"workflowId": "gate-fixture", "goal": "Add a discount", "workspace": str(world.workspace)}
    started = server.rpc("tools/call", {"name": "workflow_start", "arguments": args})
    run: str = started["result"]["structuredContent"]["runId"]
    world.run_id = run
    arguments = {"runId": run, "stepId": "plan", "output": "plan done"}
    assert "error" not in server.rpc("tools/call", {"name": "workflow_continue", "arguments": arguments})
    read = {"file_path": str(world.workspace / "README.md")}
    hook = claude_input(world, "PreToolUse", tool_name="Read", tool_input=read)
    assert server.client.post(f"{server.base}/hooks/claude-code", content=hook).status_code == 200
    assert any(e["type"] == "gate" for e in world.events()), "the gate did not see the run"
    return run


def test_a_run_only_a_person_ends_is_abandoned_with_the_persons_passkey_whose_signature_verify_checks(
    world: GateWorld, page: Any
) -> None:
    fixture = world.workflows / "gate-fixture.json"
    fixture.write_text(json.dumps({**json.loads(fixture.read_text("utf-8")), "abandon": "person"}), "utf-8")
    args = ("--no-bundled", "--workflows", str(world.workflows), "--database", world.url)
    with HttpServer(*args, env={"HANDRAIL_HOME": str(world.handrail_home)}) as server:
        local = f"http://localhost:{server.port}"
        cdp = page.context.new_cdp_session(page)
        cdp.send("WebAuthn.enable")
        cdp.send("WebAuthn.addVirtualAuthenticator", {"options": AUTHENTICATOR})
        page.goto(f"{local}/passkeys")
        page.fill("#passkey-name", "laptop")
        page.click("#add-passkey")
        assert page.locator("#note").inner_text() == "Passkey registered."

        run = watched_run_only_a_person_ends(world, server)
        # the agent's shell: refused, naming the page where the person signs it
        refused = handrail(world, "runs", "abandon", run, "--database", world.url)
        assert refused.returncode == 1, refused.stdout
        assert "abandon it with your passkey" in refused.stderr and f"/runs/{run}" in refused.stderr
        stop = claude_input(world, "Stop", stop_hook_active=False)
        held = server.client.post(f"{server.base}/hooks/claude-code", content=stop)
        assert held.json()["decision"] == "block"  # the run goes on, and so does the gate
        posted = bare_post(server.base, run, "aband%6Fn")  # the agent's curl on the tokenless dashboard
        assert posted.status_code == 303 and f"/runs/{run}/sign?verb=abandon" in posted.headers["location"]
        assert status(world, run) == "active"

        # the person, on the run's page, with the passkey
        page.goto(f"{local}/runs/{run}")
        page.fill("#abandon-reason", "Not needed after all")
        page.click("#abandon-run")
        page.locator("#sign").wait_for()
        assert 'its workflow says "abandon": "person"' in page.locator("#presence").inner_text()
        page.click("#sign")
        assert page.locator(".note").inner_text() == "Abandoned."
        assert page.errors == []

    assert status(world, run) == "abandoned"
    abandoned = next(e for e in world.events() if e["type"] == "abandoned")
    assert abandoned["reason"] == "Not needed after all"
    assert (abandoned["by"], abandoned["person"], abandoned["via"]) == ("person", "local", "dashboard")
    assert abandoned["presence"]["method"] == "passkey"
    db = sqlite3.connect(world.database)
    try:
        seq = abandoned["seq"] - 1
        head = db.execute("SELECT hash FROM run_events WHERE run_id = ? AND seq = ?", (run, seq)).fetchone()
    finally:
        db.close()
    assert abandoned["presence"]["head"] == head[0]  # the chain's head when the person signed

    verified = handrail(world, "runs", "verify", run, "--database", world.url)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    rewrite_from_the_start(world, run)
    broken = handrail(world, "runs", "verify", run, "--database", world.url)
    assert broken.returncode == 1
    assert f"BROKEN at event {abandoned['seq']}" in broken.stdout
    assert "the log before it was rewritten" in broken.stdout
