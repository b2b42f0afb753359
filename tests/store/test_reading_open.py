"""A SQLite store opened only to read (`handrail runs list`, `runs show`, `stats`) is not
checked whole when it opens, since that costs the file's size each time: damage in the
pages it reads is still refused, naming the file, and the check comes before any write
it makes after all, so a damaged file is never written to."""

from __future__ import annotations

from pathlib import Path

import pytest

from handrail.model.errors import StorageError
from handrail.model.runs import EventType, NewEvent, RunUpdate
from handrail.store import open_store
from handrail.store.urls import sqlite_url
from tests.helpers.damage import damage_table
from tests.helpers.event_log import fill_case


@pytest.fixture
def database(tmp_path: Path) -> Path:
    """The statistics' golden runs, in a file of their own."""
    path = tmp_path / "runs.db"
    fill_case(sqlite_url(path))
    return path


def test_a_file_damaged_where_a_reader_does_not_look_is_read_and_refused_for_writing(database: Path) -> None:
    damage_table(database, "stats_visits")
    damaged = database.read_bytes()
    with pytest.raises(StorageError, match="is damaged"):
        open_store(sqlite_url(database))  # a writer checks the whole file first

    store = open_store(sqlite_url(database), reading=True)
    try:
        run = store.get("run_b2")
        assert run is not None and run.status == "active"  # the run's pages are whole
        assert {r.id for r in store.list_runs()} >= {"run_a1", "run_b2"}
        with pytest.raises(StorageError, match="is damaged") as refused:
            store.update(run, RunUpdate(), [NewEvent(EventType.ABANDONED, data={"reason": "x"})], "me")
        assert str(database) in refused.value.message
        with pytest.raises(StorageError, match="is damaged"):  # and every call from then on
            store.get("run_b2")
    finally:
        store.close()
    assert database.read_bytes() == damaged


def test_a_reader_meeting_damage_in_the_pages_it_reads_names_it(database: Path) -> None:
    damage_table(database, "runs")
    store = open_store(sqlite_url(database), reading=True)
    try:
        with pytest.raises(StorageError, match="is damaged") as refused:
            store.list_runs()
        assert str(database) in refused.value.message and refused.value.data["problem"] == "damaged"
    finally:
        store.close()


def test_a_reader_of_a_whole_file_writes_once_checked(database: Path) -> None:
    store = open_store(sqlite_url(database), reading=True)
    try:
        run = store.get("run_b2")
        assert run is not None
        written = store.update(run, RunUpdate(), [NewEvent(EventType.ABANDONED, data={"reason": "x"})], "me")
        assert written.version == run.version + 1
    finally:
        store.close()
