"""Who is asking: the people of a `handrail serve` deployment and their bearer tokens.

A tokens file (`--tokens FILE`, or HANDRAIL_TOKENS_FILE) names one person per line:

    # name   token, or the SHA-256 of it (what `handrail token NAME` prints)
    alice    sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
    bob      a-long-random-token-of-at-least-16-characters

Blank lines and lines starting with `#` are ignored. A person may have several lines
(several tokens: a new one can be handed out before the old one is removed); a token
may belong to one person only. HANDRAIL_TOKEN, the shared token of earlier versions,
keeps working as one identity, `local`: the owner of every run a server without
per-person tokens starts.

Every token is kept as its SHA-256 only; a request's token is hashed and compared with
every known hash in constant time (no early exit), so neither timing nor logs tell a
token, and a stolen tokens file with hashed lines gives no usable token.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from handrail.store.base import LOCAL_OWNER

HASH_PREFIX = "sha256:"
MIN_TOKEN_CHARS = 16
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$")
HEX_DIGEST = re.compile(r"^[0-9a-f]{64}$")
TOKEN_CHARS = re.compile(r"^[\x21-\x7e]+$")  # what fits in an Authorization header unquoted


class TokensFileError(Exception):
    """A tokens file that cannot be used; the message names the file and the line."""


def digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


@dataclass(frozen=True)
class People:
    """Known token digests and the person each names."""

    entries: tuple[tuple[bytes, str], ...]

    def identify(self, token: str) -> str | None:
        """The person `token` belongs to, or None. Constant time in the token's value:
        every entry is compared, whatever matched before."""
        given = digest(token)
        found: str | None = None
        for known, person in self.entries:
            if hmac.compare_digest(given, known):
                found = person
        return found

    def __len__(self) -> int:
        return len({person for _, person in self.entries})

    @classmethod
    def shared(cls, token: str) -> People:
        """HANDRAIL_TOKEN: one token, one identity for everyone who holds it."""
        return cls(((digest(token), LOCAL_OWNER),))

    @classmethod
    def combined(cls, *groups: People | None) -> People | None:
        entries = tuple(e for group in groups if group is not None for e in group.entries)
        return cls(entries) if entries else None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> People:
        """The people of a tokens file; TokensFileError names the file and line of a bad one."""
        where = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TokensFileError(f"{where}: cannot read the tokens file ({exc})") from None
        entries: list[tuple[bytes, str]] = []
        seen: dict[bytes, int] = {}
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            at = f"{where}:{number}"
            fields = line.split()
            if len(fields) != 2:  # never echo the line: it may hold a token
                raise TokensFileError(
                    f"{at}: expected `NAME TOKEN` or `NAME sha256:HEX`, found {len(fields)} fields"
                )
            name, secret = fields
            if not NAME.match(name):
                raise TokensFileError(
                    f"{at}: a name is 1 to 64 letters, digits or . _ @ + - (starting with a letter or digit)"
                )
            if name == LOCAL_OWNER:  # it would own every run started over stdio or the shared token
                raise TokensFileError(
                    f"{at}: the name `{LOCAL_OWNER}` is kept for HANDRAIL_TOKEN and runs started "
                    "without a token"
                )
            if secret.startswith(HASH_PREFIX):
                hexdigest = secret[len(HASH_PREFIX) :].lower()
                if not HEX_DIGEST.match(hexdigest):
                    raise TokensFileError(f"{at}: a sha256: hash is 64 hexadecimal digits")
                known = bytes.fromhex(hexdigest)
            else:
                if len(secret) < MIN_TOKEN_CHARS or not TOKEN_CHARS.match(secret):
                    raise TokensFileError(
                        f"{at}: a token is at least {MIN_TOKEN_CHARS} printable characters "
                        "(`handrail token NAME` makes one)"
                    )
                known = digest(secret)
            if known in seen:
                raise TokensFileError(f"{at}: this token is already given on line {seen[known]}")
            seen[known] = number
            entries.append((known, name))
        if not entries:
            raise TokensFileError(f"{where}: the tokens file names nobody")
        return cls(tuple(entries))


def new_token() -> str:
    return secrets.token_urlsafe(32)  # 256 random bits


def token_line(name: str, token: str) -> str:
    """The tokens-file line for `name` holding `token`: its hash, never the token."""
    return f"{name} {HASH_PREFIX}{hashlib.sha256(token.encode('utf-8')).hexdigest()}"


def bearer(authorization: str) -> str | None:
    """The token of an `Authorization: Bearer <token>` header (scheme in any case)."""
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None
