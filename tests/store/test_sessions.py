"""The dashboard's sessions as both stores keep them: found until they expire or end,
kept under the hash of their id only, and a person's oldest dropped past the bound."""

from __future__ import annotations

import pytest

from handrail.store import RunStore
from handrail.store.sessions import PER_PERSON, KeptSession, key_of
from tests.store.test_store import store, store_url  # noqa: F401  # the fixtures, on both stores

pytestmark = pytest.mark.slow

NOW = 1_800_000_000.0


def test_a_session_is_found_until_it_expires_or_ends(store: RunStore) -> None:  # noqa: F811
    store.keep_session("id-one", KeptSession("ana", "csrf-1", NOW + 60), NOW)
    store.keep_session("id-two", KeptSession("ana", "csrf-2", NOW + 60), NOW)
    assert store.kept_session("id-one", NOW) == KeptSession("ana", "csrf-1", NOW + 60)
    assert store.kept_session("id-one", NOW + 61) is None  # expired
    store.end_session("id-two")
    assert store.kept_session("id-two", NOW) is None
    assert store.kept_session("no-such-id", NOW) is None


def test_only_the_hash_of_a_session_id_is_kept(store: RunStore) -> None:  # noqa: F811
    store.keep_session("the-cookie-value", KeptSession("ana", "csrf", NOW + 60), NOW)
    assert store.kept_session(key_of("the-cookie-value"), NOW) is None  # the row's key is no cookie


def test_a_persons_oldest_sessions_past_the_bound_and_every_expired_one_are_dropped(
    store: RunStore,  # noqa: F811
) -> None:
    store.keep_session("bob-old", KeptSession("bob", "c", NOW + 5), NOW)
    for n in range(PER_PERSON + 1):
        store.keep_session(f"ana-{n}", KeptSession("ana", "c", NOW + 100 + n), NOW + 10)
    assert store.kept_session("ana-0", NOW + 10) is None  # the oldest beyond the bound
    assert store.kept_session("ana-1", NOW + 10) is not None
    assert store.kept_session(f"ana-{PER_PERSON}", NOW + 10) is not None
    assert store.kept_session("bob-old", NOW) is None  # expired at the last sign-in: dropped
