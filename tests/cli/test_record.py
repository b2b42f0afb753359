"""`handrail runs export`, `handrail runs verify --file` and `handrail key generate`:
a run's record written from the store, checked offline, and refused after any change."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from handrail.catalog import load_catalog
from handrail.cli import main
from handrail.runs.record import verify
from handrail.runs.signing import load_public_key
from handrail.service.core import Service
from tests.runs.workflows import WORKFLOW_ID, build_feature, write

CHECKED = {
    **build_feature(),
    "steps": [
        {
            "id": "plan",
            "title": "Plan",
            "prompt": "Write the plan.",
            "checks": [{"type": "file", "path": "PLAN.md", "message": "Write PLAN.md"}],
        },
        {"id": "ship", "title": "Ship", "prompt": "Ship it.", "requireConfirmation": True},
    ],
}


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def run_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """A completed run in the default database with a failed and a passed file check, an
    approval by a named person, and text a JSON encoder could reshape (é, a wide integer)."""
    write(tmp_path / "flows", CHECKED)
    workspace = tmp_path / "work"
    workspace.mkdir()
    service = Service(load_catalog(tmp_path / "flows", bundled=False))
    try:
        started = service.call(
            "workflow_start",
            {"workflowId": WORKFLOW_ID, "goal": "Café", "workspace": str(workspace), "context": {"n": 2**70}},
        )
        run = started["runId"]
        service.call("workflow_continue", {"runId": run, "stepId": "plan", "output": "Plan: no file"})
        (workspace / "PLAN.md").write_text("the plan\n")
        service.call("workflow_continue", {"runId": run, "stepId": "plan", "output": "Plan: in PLAN.md"})
        waiting = service.call("workflow_continue", {"runId": run, "stepId": "ship", "output": "Shipped"})
        assert waiting["status"] == "awaiting_approval", waiting
    finally:
        service.close()
    code, _, err = run_cli(capsys, "runs", "approve", run, "--as", "alice", "--comment", "looks right")
    assert code == 0, err
    return str(run)


def test_an_exported_record_verifies_offline_and_holds_the_source_checks_and_approvals(
    run_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "record.json"
    code, _, err = run_cli(capsys, "runs", "export", run_id, "-o", str(out_file))
    assert code == 0 and "unsigned" in err
    record = json.loads(out_file.read_bytes())
    source = record["workflow"]["source"].encode()
    assert hashlib.sha256(source).hexdigest() == record["workflow"]["sourceHash"]
    assert json.loads(source)["id"] == WORKFLOW_ID
    assert [c["passed"] for c in record["checks"]] == [False, True]
    [approval] = record["approvals"]
    assert (approval["decision"], approval["person"], approval["comment"]) == (
        "approved",
        "alice",
        "looks right",
    )
    assert record["run"]["events"] == len(record["events"]) and record["run"]["status"] == "completed"
    shutil.rmtree(os.environ["HANDRAIL_HOME"])  # offline: the store is gone
    code, out, _ = run_cli(capsys, "runs", "verify", "--file", str(out_file))
    assert code == 0, out
    assert f"verified: run {run_id}, {len(record['events'])} events" in out and "unsigned" in out


def positions(size: int) -> list[int]:
    """Every 37th byte, the first and last few, so that each part of the record is hit."""
    return sorted({*range(0, size, 37), 0, 1, 2, size - 3, size - 2, size - 1})


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
def test_a_record_with_any_byte_changed_added_or_removed_fails_to_verify(
    run_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], signed: bool
) -> None:
    out_file = tmp_path / "record.json"
    key = ["--signing-key", str(tmp_path / "k.pem")] if signed else []
    if signed:
        assert run_cli(capsys, "key", "generate", str(tmp_path / "k.pem"))[0] == 0
    assert run_cli(capsys, "runs", "export", run_id, "-o", str(out_file), *key)[0] == 0
    data = out_file.read_bytes()
    assert verify(data).problem is None and (verify(data).signed_by is not None) == signed
    for at in positions(len(data)):
        for changed in (
            data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :],  # a bit flipped
            data[:at] + data[at + 1 :],  # removed
            data[:at] + b" " + data[at:],  # whitespace added
        ):
            assert verify(changed).problem is not None, (at, changed[max(0, at - 20) : at + 20])
    for odd in (data.rstrip(b"\n"), data + b"\n", data.replace(b'":', b'": ', 1), b"\xef\xbb\xbf" + data):
        assert verify(odd).problem is not None
    out_file.write_bytes(data.replace(b'"alice"', b'"mallo"'))
    code, out, _ = run_cli(capsys, "runs", "verify", "--file", str(out_file))
    assert code == 1 and "NOT VERIFIED" in out and "digest" in out


def test_a_record_rewritten_with_fresh_hashes_is_caught_only_by_its_signature(
    run_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = tmp_path / "server.pem"
    code, out, _ = run_cli(capsys, "key", "generate", str(key))
    assert code == 0 and key.stat().st_mode & 0o777 == 0o600
    published = json.loads(out.splitlines()[1])
    (tmp_path / "key.json").write_text(json.dumps(published))
    signed = tmp_path / "signed.json"
    code, _, err = run_cli(capsys, "runs", "export", run_id, "-o", str(signed), "--signing-key", str(key))
    assert code == 0 and published["fingerprint"] in err
    code, out, _ = run_cli(
        capsys, "runs", "verify", "--file", str(signed), "--key", str(tmp_path / "key.json")
    )
    assert code == 0 and f"signed by {published['fingerprint']}" in out and "note" not in out
    code, out, _ = run_cli(capsys, "runs", "verify", "--file", str(signed))
    assert code == 0 and "the key the record itself carries" in out  # what an embedded key proves
    # a forger changes the approver and recomputes every hash, the digest, and drops the signature
    forged = forge(json.loads(signed.read_bytes()), "mallory")
    (tmp_path / "forged.json").write_bytes(forged)
    assert run_cli(capsys, "runs", "verify", "--file", str(tmp_path / "forged.json"))[0] == 0
    code, out, _ = run_cli(
        capsys, "runs", "verify", "--file", str(tmp_path / "forged.json"), "--key", str(tmp_path / "key.json")
    )
    assert code == 1 and "not signed" in out
    # ... or keeps a signature, which then fails; or signs with a key of its own
    resigned = json.loads(signed.read_bytes())
    kept = resigned["signature"]
    forged_record = json.loads(forge(resigned, "mallory"))
    forged_record["signature"] = kept
    from handrail.store.chain_form import canonical

    (tmp_path / "kept.json").write_bytes(canonical(forged_record) + b"\n")
    code, out, _ = run_cli(capsys, "runs", "verify", "--file", str(tmp_path / "kept.json"))
    assert code == 1 and "signature does not hold" in out
    other = tmp_path / "other.pem"
    assert run_cli(capsys, "key", "generate", str(other))[0] == 0
    code, out, _ = run_cli(capsys, "runs", "verify", "--file", str(signed), "--key", str(other))
    assert code == 1 and "not by the key given" in out


def forge(record: dict[str, Any], person: str) -> bytes:
    """`record` with its approval given to `person`, every hash and the digest made anew,
    unsigned: what anyone can do to an unsigned record (spec/record.md)."""
    from handrail.store.chain_form import canonical, event_hash, hashed_form

    record.pop("signature", None)
    prev = None
    for e in record["events"]:
        if e["type"] == "approved":
            e["actor"] = person
            e["data"]["person"] = person
        e["prev"] = prev
        e["hash"] = prev = event_hash(
            hashed_form(
                record["run"]["runId"], e["seq"], e["type"], e["at"], e["actor"], e["stepId"], e["data"], prev
            )
        )
    record["run"]["head"] = prev
    record["approvals"][0]["person"] = person
    content = {k: v for k, v in record.items() if k != "digest"}
    record["digest"] = hashlib.sha256(canonical(content)).hexdigest()
    return canonical(record) + b"\n"


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_a_key_made_by_openssl_signs_and_its_public_pem_verifies(
    run_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key, public = tmp_path / "k.pem", tmp_path / "pub.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", str(key)], check=True)
    subprocess.run(["openssl", "pkey", "-in", str(key), "-pubout", "-out", str(public)], check=True)
    signed = tmp_path / "signed.json"
    assert run_cli(capsys, "runs", "export", run_id, "-o", str(signed), "--signing-key", str(key))[0] == 0
    code, out, _ = run_cli(capsys, "runs", "verify", "--file", str(signed), "--key", str(public))
    assert code == 0 and load_public_key(public).fingerprint in out
    raw = base64.b64decode(json.loads(signed.read_bytes())["signature"]["publicKey"])
    assert hashlib.sha256(raw).hexdigest() in out


def test_bad_keys_and_files_are_named_not_crashed_on(
    run_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "junk.pem").write_text("not a key")
    code, _, err = run_cli(capsys, "runs", "export", run_id, "--signing-key", str(tmp_path / "junk.pem"))
    assert code == 2 and "junk.pem is not an unencrypted PEM private key" in err
    code, _, err = run_cli(capsys, "key", "generate", str(tmp_path / "junk.pem"))
    assert code == 1 and "exists already" in err
    code, out, _ = run_cli(capsys, "runs", "verify", "--file", str(tmp_path / "junk.pem"))
    assert code == 1 and "not JSON" in out
    code, _, err = run_cli(capsys, "runs", "verify", "--file", str(tmp_path / "missing.json"))
    assert code == 1 and "cannot read" in err
    code, _, err = run_cli(capsys, "runs", "verify", run_id, "--key", str(tmp_path / "junk.pem"))
    assert code == 2 and "--key checks an exported record" in err
    code, _, err = run_cli(capsys, "runs", "export", "run_" + "0" * 32)
    assert code == 1 and "Run not found" in err


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("owner", "mallory"),
        ("status", "abandoned"),
        ("goal", "Something else"),
        ("workflowId", "other-flow"),
        ("workflowVersion", "9.9.9"),
    ],
)
def test_a_header_changed_digest_recomputed_and_signed_anew_does_not_verify(
    run_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: str
) -> None:
    from handrail.runs.signing import generate
    from handrail.store.chain_form import canonical

    exported = tmp_path / "record.json"
    assert run_cli(capsys, "runs", "export", run_id, "-o", str(exported))[0] == 0
    record = json.loads(exported.read_bytes())
    record["run"][field] = value
    content = {k: v for k, v in record.items() if k not in ("digest", "signature")}
    record["digest"] = hashlib.sha256(canonical(content)).hexdigest()
    key = generate(tmp_path / "forger.pem")
    record["signature"] = {
        **key.public.published(),
        "value": base64.b64encode(key.sign(canonical(record))).decode(),
    }
    (tmp_path / "forged.json").write_bytes(canonical(record) + b"\n")
    code, out, _ = run_cli(capsys, "runs", "verify", "--file", str(tmp_path / "forged.json"))
    assert code == 1, out
    assert f"header's `{field}`" in out and "NOT VERIFIED" in out
