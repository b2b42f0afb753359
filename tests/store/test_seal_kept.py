"""What a process keeps of the seals it checked (store/state_seal.py) and of the step
policies it compiled (runs/gate_digest.py) is bounded: a number of entries, and no row
larger than `KEPT_BYTES` kept at all; and what is kept answers as the whole computation
does (tests/gate/test_gate_http_kept.py holds it to rows that change under a server)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from handrail.runs import gate_digest
from handrail.store import state_seal
from handrail.store.rows import RUN_COLUMNS, run_record
from tests.gate.runs import GateWorld

FIELDS = len(state_seal.SEALED) + len(state_seal.SEALED_ONCE)


def fields(n: int, context: str = "{}") -> tuple[object, ...]:
    """The stored sealed fields of a made-up row, the `n`th of its kind."""
    values: list[object] = [f"value-{n}"] * FIELDS
    values[state_seal.CONTEXT_AT], values[state_seal.POSITION_AT] = context, json.dumps({"n": n})
    return tuple(values)


def test_the_digests_kept_are_bounded_in_number() -> None:
    state_seal.kept_digests.cache_clear()
    for n in range(state_seal.DIGESTS_KEPT * 3):
        state_seal.stored_digests(fields(n))
    assert state_seal.kept_digests.cache_info().currsize == state_seal.DIGESTS_KEPT


def test_a_row_larger_than_the_bound_is_digested_afresh_and_never_kept() -> None:
    state_seal.kept_digests.cache_clear()
    large = fields(0, json.dumps({"notes": "x" * state_seal.KEPT_BYTES}))
    first, again = state_seal.stored_digests(large), state_seal.stored_digests(large)
    assert first == again and state_seal.kept_digests.cache_info().currsize == 0


def test_a_value_equal_to_another_of_another_type_is_never_answered_from_the_kept_digests() -> None:
    state_seal.kept_digests.cache_clear()
    whole, counted = list(fields(0)), list(fields(0))
    whole[state_seal.SEALED_NAMES.index("accepted")] = 1
    counted[state_seal.SEALED_NAMES.index("accepted")] = 1.0  # equal as a key, not as a digest
    state_seal.stored_digests(tuple(whole))
    assert state_seal.stored_digests(tuple(counted)) != state_seal.stored_digests(tuple(whole))
    assert state_seal.kept_digests.cache_info().currsize == 1


def test_the_seals_and_policies_kept_are_bounded_in_number() -> None:
    state_seal.read_seal.cache_clear()
    gate_digest.policy_of.cache_clear()
    for n in range(100):
        state_seal.read_seal(state_seal.seal({"goal": f"{n}"}, None, n))
        text = json.dumps({"form": 1, "step": f"s{n}", "count": 1, "folders": [], "rules": {"deny": []}})
        gate_digest.policy_of(text)
    assert state_seal.read_seal.cache_info().currsize == state_seal.DIGESTS_KEPT
    assert gate_digest.policy_of.cache_info().currsize == gate_digest.POLICIES_KEPT


def test_a_rows_kept_digests_are_the_ones_its_fields_give(tmp_path: Path) -> None:
    world = GateWorld(tmp_path)
    world.start("implement")
    world.close()
    with sqlite3.connect(world.database) as db:
        row = db.execute(f"SELECT {RUN_COLUMNS} FROM runs").fetchone()
    db.close()
    run = run_record(row)
    kept = state_seal.stored_digests(state_seal.stored_fields(run, row[8], row[9]))
    assert run.tampered == () and dict(kept) == state_seal.digests(run)
