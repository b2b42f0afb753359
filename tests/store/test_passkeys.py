"""The people's passkeys as both stores keep them: added, listed per person, their
signature counter kept, removed only by their own person."""

from __future__ import annotations

import pytest

from handrail.store import RunStore
from handrail.store.passkeys import Passkey
from tests.store.test_store import store, store_url  # noqa: F401  # the fixtures, on both stores

pytestmark = pytest.mark.slow


def key(credential: str, person: str, at: str) -> Passkey:
    return Passkey(credential, person, "pQECAyYgAQ", 0, "localhost", f"{person}'s laptop", at)


def test_a_persons_passkeys_are_kept_listed_counted_and_removed_by_that_person(store: RunStore) -> None:  # noqa: F811
    store.add_passkey(key("cred-b", "ana", "2026-01-02T00:00:00.000Z"))
    store.add_passkey(key("cred-a", "ana", "2026-01-01T00:00:00.000Z"))
    store.add_passkey(key("cred-c", "bob", "2026-01-03T00:00:00.000Z"))
    assert [k.credential_id for k in store.passkeys("ana")] == ["cred-a", "cred-b"]
    assert [k.person for k in store.passkeys()] == ["ana", "ana", "bob"]
    store.passkey_used("cred-a", 7)
    assert store.passkeys("ana")[0].sign_count == 7
    assert store.remove_passkey("bob", "cred-a") is False  # another's key stays
    assert store.remove_passkey("ana", "cred-a") is True
    assert [k.credential_id for k in store.passkeys("ana")] == ["cred-b"]
