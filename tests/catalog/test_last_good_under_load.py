"""The last good version of a workflow file is never lost, however an edit that breaks
it falls between the catalog's threads.

A served catalog checks the files of its first listing on a thread of its own (the
checker) while its watcher lists what changed. Here files are broken mid-write (the
first half of their next version, as an editor's save leaves them for a moment) and
mended (the rest written) again and again, just as a served catalog starts checking,
with a busy thread competing for the interpreter. Every snapshot listed after a break
must still serve the version last mended, and the mended one after a mend. Counts are
bounded; nothing waits on a clock.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from handrail.catalog import Catalog, Snapshot, Source

pytestmark = pytest.mark.slow

ROUNDS = 200  # served catalogs, each started afresh: the checker's first pass is where it races
FILES = 3  # files per catalog, broken while the checker goes through them
MENDS = 3  # break-and-mend cycles per file and round
# 200 * 3 * (1 + 3) = 2,400 broken files, each listed and looked at
STEPS = 30  # files of some size (about 35 kB): checking one takes a while, and so does keeping it
PROMPT = "Do this step as its title says, and say what you did. " * 20


def text(wid: str, version: str) -> str:
    steps = [{"id": f"step-{n}", "title": f"Step {n}", "prompt": PROMPT} for n in range(STEPS)]
    return json.dumps({"id": wid, "name": wid, "description": wid, "version": version, "steps": steps})


@pytest.fixture
def busy() -> Iterator[None]:
    """A thread that keeps the interpreter busy, as a server's requests would: the
    catalog's threads are switched out wherever the interpreter chooses."""
    stop = threading.Event()

    def spin() -> None:
        count = 0
        while not stop.is_set():
            count += 1

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def served(snapshot: Snapshot, wid: str) -> tuple[str, bool]:
    entry = snapshot.entries.get(wid)
    assert entry is not None, f"{wid}'s last good version is lost: {sorted(snapshot.entries)}"
    return entry.item.version, entry.stale


def test_no_break_mid_write_ever_loses_a_files_last_good_version(tmp_path: Path, busy: None) -> None:
    for round_ in range(ROUNDS):
        folder = tmp_path / f"round-{round_}"
        folder.mkdir()
        ids = [f"w{n:02d}" for n in range(FILES)]
        for wid in ids:
            (folder / f"{wid}.json").write_text(text(wid, "1.0.0"), encoding="utf-8")
        catalog = Catalog([Source("cli", folder)], interval=0.01)
        catalog.watch()
        try:
            assert sorted(catalog.snapshot().entries) == ids  # listed: now the checker goes through them
            good = dict.fromkeys(ids, "1.0.0")
            for cycle in range(1, MENDS + 2):
                halves: dict[str, str] = {}
                for wid in ids:  # each file now holds the first half of its next version
                    halves[wid] = text(wid, f"1.0.{cycle}")
                    path = folder / f"{wid}.json"
                    with path.open("w", encoding="utf-8") as out:
                        out.write(halves[wid][: len(halves[wid]) // 2])
                broken = catalog.reload()
                for wid in ids:
                    assert served(broken, wid) == (good[wid], True), f"round {round_}, cycle {cycle}"
                if cycle > MENDS:
                    break
                for wid in ids:  # the rest of each write: the file is good again
                    with (folder / f"{wid}.json").open("a", encoding="utf-8") as out:
                        out.write(halves[wid][len(halves[wid]) // 2 :])
                    good[wid] = f"1.0.{cycle}"
                mended = catalog.reload()
                for wid in ids:
                    assert served(mended, wid) == (good[wid], False), f"round {round_}, cycle {cycle}"
        finally:
            catalog.close()
