"""The dashboard's passkey challenges as both stores keep them: taken once, whichever
server takes it, never after they expire, kept under the hash of their key only, and a
person's oldest dropped past the bound."""

from __future__ import annotations

import pytest

from handrail.store import RunStore, open_store
from handrail.store.challenges import PER_PERSON, key_of
from tests.store.test_store import store, store_url  # noqa: F401  # the fixtures, on both stores

pytestmark = pytest.mark.slow

NOW = 1_800_000_000.0


def test_a_challenge_is_taken_once_and_never_after_it_expires(store: RunStore) -> None:  # noqa: F811
    store.keep_challenge("session-1:run-1", "ana", '{"nonce": "n1"}', NOW + 60, NOW)
    store.keep_challenge("session-1:run-2", "ana", '{"nonce": "n2"}', NOW + 60, NOW)
    assert store.take_challenge("session-1:run-1", NOW) == '{"nonce": "n1"}'
    assert store.take_challenge("session-1:run-1", NOW) is None  # one use only
    assert store.take_challenge("session-1:run-2", NOW + 61) is None  # expired
    assert store.take_challenge("no-such-key", NOW) is None


def test_asking_again_replaces_the_challenge_asked_before(store: RunStore) -> None:  # noqa: F811
    store.keep_challenge("session-1:register", "ana", "first", NOW + 60, NOW)
    store.keep_challenge("session-1:register", "ana", "second", NOW + 60, NOW)
    assert store.take_challenge("session-1:register", NOW) == "second"
    assert store.take_challenge("session-1:register", NOW) is None


def test_only_the_hash_of_a_challenges_key_is_kept(store: RunStore) -> None:  # noqa: F811
    store.keep_challenge("the-session-cookie:run", "ana", "body", NOW + 60, NOW)
    assert store.take_challenge(key_of("the-session-cookie:run"), NOW) is None


def test_a_persons_oldest_challenges_past_the_bound_and_every_expired_one_are_dropped(
    store: RunStore,  # noqa: F811
) -> None:
    store.keep_challenge("bob-old", "bob", "b", NOW + 5, NOW)
    for n in range(PER_PERSON + 1):
        store.keep_challenge(f"ana-{n}", "ana", str(n), NOW + 100 + n, NOW + 10)
    assert store.take_challenge("ana-0", NOW + 10) is None  # the oldest beyond the bound
    assert store.take_challenge("ana-1", NOW + 10) == "1"
    assert store.take_challenge(f"ana-{PER_PERSON}", NOW + 10) == str(PER_PERSON)
    assert store.take_challenge("bob-old", NOW) is None  # expired at the last ask: dropped


def test_a_challenge_asked_through_one_server_is_taken_through_another_once(store_url: str) -> None:  # noqa: F811
    asking, answering, late = (open_store(store_url) for _ in range(3))
    try:
        asking.keep_challenge("session-1:run-1", "ana", "signed-over-the-head", NOW + 60, NOW)
        assert answering.take_challenge("session-1:run-1", NOW) == "signed-over-the-head"
        assert late.take_challenge("session-1:run-1", NOW) is None
    finally:
        for opened in (asking, answering, late):
            opened.close()
