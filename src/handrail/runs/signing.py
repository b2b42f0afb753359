"""A server's Ed25519 signing key: made, read, and its public half as published.

The private key is a PKCS#8 PEM file, the form `handrail key generate` writes and
`openssl genpkey -algorithm ed25519 -out key.pem` writes too. The public key is
named by its fingerprint, `sha256:` and the hex SHA-256 of its 32 raw bytes, which a
person can compare by eye with what `/.well-known/handrail-key` serves. The
`cryptography` package is imported only here: only the commands that use a key load it.
"""

from __future__ import annotations

import base64
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from handrail.model.codec import decode

ALGORITHM = "Ed25519"


class KeyFileError(Exception):
    """A key file that cannot be used; the message names the file and the problem."""


def fingerprint(raw: bytes) -> str:
    return "sha256:" + hashlib.sha256(raw).hexdigest()


@dataclass(frozen=True, slots=True)
class PublicKey:
    raw: bytes  # the 32 bytes of an Ed25519 public key

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.raw)

    def published(self) -> dict[str, Any]:
        """What `/.well-known/handrail-key` serves, and what a signed record embeds."""
        return {
            "algorithm": ALGORITHM,
            "publicKey": base64.b64encode(self.raw).decode(),
            "fingerprint": self.fingerprint,
        }

    def verifies(self, signature: bytes, message: bytes) -> bool:
        try:
            Ed25519PublicKey.from_public_bytes(self.raw).verify(signature, message)
        except (InvalidSignature, ValueError):
            return False
        return True


@dataclass(frozen=True, slots=True)
class SigningKey:
    private: Any  # cryptography's Ed25519PrivateKey
    public: PublicKey

    def sign(self, message: bytes) -> bytes:
        return bytes(self.private.sign(message))


def generate(path: Path) -> SigningKey:
    """A new key, written to `path` (which must not exist) readable by its owner only."""

    private = Ed25519PrivateKey.generate()
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise KeyFileError(
            f"{path} exists already; handrail never overwrites a key: name another file"
        ) from None
    except OSError as exc:
        raise KeyFileError(f"cannot write {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "wb") as out:
        out.write(pem)
    return _signing(private)


def load_signing_key(path: str | Path) -> SigningKey:
    """The private key in the PEM file at `path`."""

    data = _read(path)
    try:
        private = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise KeyFileError(
            f"{path} is not an unencrypted PEM private key ({exc}); make one with "
            "`handrail key generate FILE` or `openssl genpkey -algorithm ed25519 -out FILE`"
        ) from None
    if not isinstance(private, Ed25519PrivateKey):
        raise KeyFileError(f"{path} holds a {type(private).__name__}, not an Ed25519 key")
    return _signing(private)


def load_public_key(path: str | Path) -> PublicKey:
    """A public key from a file: a PEM public key (`openssl pkey -pubout`), a PEM private
    key (its public half), or the JSON `/.well-known/handrail-key` serves."""

    data = _read(path)
    if data.lstrip().startswith(b"{"):
        try:
            published = decode(data)
            raw = base64.b64decode(published["publicKey"], validate=True)
        except (ValueError, KeyError, TypeError) as exc:
            raise KeyFileError(f"{path} is JSON but not a published key ({exc})") from None
        return _public(raw, path)
    try:
        if b"PRIVATE KEY" in data:
            found: Any = serialization.load_pem_private_key(data, password=None).public_key()
        else:
            found = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise KeyFileError(f"{path} is not a PEM key ({exc})") from None
    if not isinstance(found, Ed25519PublicKey):
        raise KeyFileError(f"{path} holds a {type(found).__name__}, not an Ed25519 key")
    return _public(found.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw), path)


def _public(raw: bytes, where: object) -> PublicKey:
    if len(raw) != 32:
        raise KeyFileError(f"{where}: an Ed25519 public key is 32 bytes, this one {len(raw)}")
    return PublicKey(raw)


def _signing(private: Any) -> SigningKey:

    raw = private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return SigningKey(private, PublicKey(bytes(raw)))


def _read(path: str | Path) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(64 * 1024)  # a key file is well under a kilobyte
    except OSError as exc:
        raise KeyFileError(f"cannot read the key file {path}: {exc.strerror or exc}") from None
