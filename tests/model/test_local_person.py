"""The name a run records for the person at this machine (approvals, `runs approve`)."""

from __future__ import annotations

import os
import pwd
from typing import Any

import pytest

from handrail.model import approvals
from handrail.model.approvals import local_person

NAME_VARIABLES = ("LOGNAME", "USER", "LNAME", "USERNAME")


def _count_account_lookups(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    looked_up: list[int] = []
    real = pwd.getpwuid

    def counting(uid: int) -> Any:
        looked_up.append(uid)
        return real(uid)

    monkeypatch.setattr(pwd, "getpwuid", counting)
    approvals._account_name.cache_clear()  # start from a process that has not asked yet
    return looked_up


def test_without_a_user_variable_the_account_database_is_read_once_for_many_calls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in NAME_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    account = pwd.getpwuid(os.getuid()).pw_name
    looked_up = _count_account_lookups(monkeypatch)

    names = {local_person() for _ in range(100)}

    assert names == {account}
    assert looked_up == [os.getuid()]


def test_a_user_variable_names_the_person_and_a_change_to_it_is_seen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in NAME_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    looked_up = _count_account_lookups(monkeypatch)
    monkeypatch.setenv("USER", "ada")
    assert local_person() == "ada"
    monkeypatch.setenv("LOGNAME", "grace")
    assert local_person() == "grace"
    assert looked_up == []
