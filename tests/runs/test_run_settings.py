"""A server's settings for its runs are made once (issue 37, point 1): given at
construction, never changed after, and `_replace` makes new ones."""

from __future__ import annotations

import pytest

from handrail.runs.ledger import RunSettings


def test_run_settings_cannot_be_changed_once_made() -> None:
    settings = RunSettings(owner="ana", lease_seconds=5.0)
    with pytest.raises(AttributeError, match="made once"):
        settings.owner = "bob"
    assert settings.owner == "ana"


def test_replace_makes_new_settings_and_leaves_the_old_ones_as_they_were() -> None:
    settings = RunSettings(owner="ana", lease_seconds=5.0)
    replaced = settings._replace(owner="bob")
    assert (replaced.owner, replaced.lease_seconds) == ("bob", 5.0)
    assert settings.owner == "ana"
    assert RunSettings().owner == "local" and RunSettings().database_file is None
