"""A person's passkeys as the store keeps them, and the SQL the SQLite and PostgreSQL
stores share for them. `mark` is the driver's placeholder (`?` for sqlite3, `%s` for
psycopg). Only public keys are kept: the private key never leaves the authenticator."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Passkey:
    credential_id: str  # base64url, as WebAuthn's `id`
    person: str
    public_key: str  # base64url of the COSE key
    sign_count: int
    rp_id: str  # the host the key was made for
    name: str
    created_at: str

    def values(self) -> tuple[Any, ...]:
        return (
            self.credential_id,
            self.person,
            self.public_key,
            self.sign_count,
            self.rp_id,
            self.name,
            self.created_at,
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "credentialId": self.credential_id,
            "person": self.person,
            "publicKey": self.public_key,
            "rpId": self.rp_id,
            "name": self.name,
            "createdAt": self.created_at,
        }


COLUMNS = "credential_id, person, public_key, sign_count, rp_id, name, created_at"


def select(mark: str, person: str | None) -> str:
    where = f" WHERE person = {mark}" if person is not None else ""
    return f"SELECT {COLUMNS} FROM passkeys{where} ORDER BY created_at, credential_id"


def insert(mark: str) -> str:
    return f"INSERT INTO passkeys ({COLUMNS}) VALUES ({', '.join([mark] * 7)})"


def count_used(mark: str) -> str:
    """A signature's counter, kept so a cloned authenticator's older count is noticed."""
    return f"UPDATE passkeys SET sign_count = {mark} WHERE credential_id = {mark}"


def delete(mark: str) -> str:
    return f"DELETE FROM passkeys WHERE person = {mark} AND credential_id = {mark}"


def passkey(row: tuple[Any, ...]) -> Passkey:
    return Passkey(str(row[0]), str(row[1]), str(row[2]), int(row[3]), str(row[4]), str(row[5]), str(row[6]))
