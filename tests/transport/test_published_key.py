"""`handrail serve --signing-key` publishes the key's public half at
/.well-known/handrail-key, and a record exported with that key verifies against what
the server published; a key file it cannot use stops it from starting."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from handrail.cli import main
from tests.helpers.http import HttpServer
from tests.helpers.server import clean_env
from tests.runs.workflows import WORKFLOW_ID, build_feature, write

pytestmark = pytest.mark.slow


def test_the_published_key_verifies_a_record_the_server_key_signed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = tmp_path / "server.pem"
    assert main(["key", "generate", str(key)]) == 0
    made = capsys.readouterr().out
    write(tmp_path / "flows", build_feature())
    database = f"sqlite:///{tmp_path / 'runs.db'}"
    args = ("--no-bundled", "--workflows", str(tmp_path / "flows"), "--database", database)
    with HttpServer(*args, "--signing-key", str(key)) as http:
        published = http.client.get(f"{http.base}/.well-known/handrail-key")
        assert published.status_code == 200
        started = http.rpc(
            "workflow_start", {"workflowId": WORKFLOW_ID, "goal": "Signed", "context": {"parts": []}}
        )
        run_id = started["result"]["runId"]
    assert published.json()["fingerprint"] in made and published.json()["algorithm"] == "Ed25519"
    (tmp_path / "published.json").write_bytes(published.content)
    record = tmp_path / "record.json"
    assert (
        main(["runs", "export", run_id, "-o", str(record), "--signing-key", str(key), "--database", database])
        == 0
    )
    capsys.readouterr()
    code = main(["runs", "verify", "--file", str(record), "--key", str(tmp_path / "published.json")])
    assert code == 0 and "verified" in capsys.readouterr().out


def test_a_server_without_a_key_says_so_at_the_well_known_address(tmp_path: Path) -> None:
    with HttpServer("--no-bundled", "--database", f"sqlite:///{tmp_path / 'runs.db'}") as http:
        answer = http.client.get(f"{http.base}/.well-known/handrail-key")
        refused = http.client.get(f"{http.base}/.well-known/handrail-key", headers={"Host": "evil.example"})
    assert answer.status_code == 404 and "--signing-key" in answer.json()["error"]
    assert refused.status_code == 403  # the Host check holds here as on every route


@pytest.mark.parametrize("command", ["serve", "dashboard"])
def test_a_key_file_the_server_cannot_use_stops_it_before_it_listens(tmp_path: Path, command: str) -> None:
    (tmp_path / "junk.pem").write_text("-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n")
    ended = subprocess.run(
        [
            sys.executable,
            "-m",
            "handrail",
            command,
            "--port",
            "0",
            "--signing-key",
            str(tmp_path / "junk.pem"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(tmp_path),
        cwd=tmp_path,
    )
    assert ended.returncode == 2
    assert (
        f"handrail {command}: --signing-key: {tmp_path / 'junk.pem'} is not an unencrypted PEM"
        in ended.stderr
    )
