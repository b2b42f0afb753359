"""Who is asking: the people of a `handrail serve` deployment and their bearer tokens.

A tokens file (`--tokens FILE`, or HANDRAIL_TOKENS_FILE) names one person per line:

    # name   token, or the SHA-256 of it (what `handrail token NAME` prints)
    alice    sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
    bob      a-long-random-token-of-at-least-16-characters

A line may go on with a person's roles and the token's scope, in any order:

    carol    sha256:...   roles=lead,qa   scope=person

Roles name who may approve a step that names `role:lead` among its approvers. The
scope says where the token is good: `agent` reaches `/mcp` only (an agent's MCP
client); `person` signs in to the dashboard and approves through it or its JSON API,
but does not reach `/mcp`; `both` does all of it. A line without `scope=` is `both`,
as every token was before scopes: give an agent a token of its own with
`scope=agent` so that it cannot approve its own steps.

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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from handrail.store.base import LOCAL_OWNER

HASH_PREFIX = "sha256:"
MIN_TOKEN_CHARS = 16
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$")
HEX_DIGEST = re.compile(r"^[0-9a-f]{64}$")
TOKEN_CHARS = re.compile(r"^[\x21-\x7e]+$")  # what fits in an Authorization header unquoted
ROLE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$")
SCOPES = ("agent", "person", "both")
AGENT, PERSON, BOTH = SCOPES
NO_ROLES: Mapping[str, frozenset[str]] = MappingProxyType({})


class TokensFileError(Exception):
    """A tokens file that cannot be used; the message names the file and the line."""


def digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


@dataclass(frozen=True)
class People:
    """Known token digests and the person each names; each token's scope (in the order
    of `entries`; `both` where none is given) and each person's roles."""

    entries: tuple[tuple[bytes, str], ...]
    scopes: tuple[str, ...] = ()
    roles: Mapping[str, frozenset[str]] = field(default_factory=lambda: NO_ROLES)

    def identify(self, token: str, *, scope: str | None = None) -> str | None:
        """The person `token` belongs to, or None; with `scope` (`agent` or `person`),
        only when the token's scope covers it. Constant time in the token's value:
        every entry is compared, whatever matched before."""
        found = self.credential(token)
        if found is None or (scope is not None and found[1] not in (scope, BOTH)):
            return None
        return found[0]

    def credential(self, token: str) -> tuple[str, str] | None:
        """(person, scope) of `token`, or None."""
        given = digest(token)
        found: tuple[str, str] | None = None
        for index, (known, person) in enumerate(self.entries):
            if hmac.compare_digest(given, known):
                found = (person, self.scopes[index] if index < len(self.scopes) else BOTH)
        return found

    def roles_of(self, person: str) -> frozenset[str]:
        return self.roles.get(person, frozenset())

    def __len__(self) -> int:
        return len({person for _, person in self.entries})

    @classmethod
    def shared(cls, token: str) -> People:
        """HANDRAIL_TOKEN: one token, one identity for everyone who holds it."""
        return cls(((digest(token), LOCAL_OWNER),))

    @classmethod
    def combined(cls, *groups: People | None) -> People | None:
        present = [group for group in groups if group is not None]
        entries = tuple(e for group in present for e in group.entries)
        scopes = tuple(
            group.scopes[i] if i < len(group.scopes) else BOTH
            for group in present
            for i in range(len(group.entries))
        )
        roles: dict[str, frozenset[str]] = {}
        for group in present:
            for person, held in group.roles.items():
                roles[person] = roles.get(person, frozenset()) | held
        return cls(entries, scopes, MappingProxyType(roles)) if entries else None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> People:
        """The people of a tokens file; TokensFileError names the file and line of a bad one."""
        where = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TokensFileError(f"{where}: cannot read the tokens file ({exc})") from None
        entries: list[tuple[bytes, str]] = []
        scopes: list[str] = []
        roles: dict[str, frozenset[str]] = {}
        seen: dict[bytes, int] = {}
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            at = f"{where}:{number}"
            fields = line.split()
            if len(fields) < 2:  # never echo the line: it may hold a token
                raise TokensFileError(
                    f"{at}: expected `NAME TOKEN` or `NAME sha256:HEX`, found {len(fields)} fields"
                )
            name, secret = fields[:2]
            scope, held = _settings(fields[2:], at)
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
            scopes.append(scope)
            roles[name] = roles.get(name, frozenset()) | held
        if not entries:
            raise TokensFileError(f"{where}: the tokens file names nobody")
        return cls(tuple(entries), tuple(scopes), MappingProxyType(roles))


def _settings(fields: list[str], at: str) -> tuple[str, frozenset[str]]:
    """The scope and roles of a line's `scope=...` and `roles=a,b` fields."""
    scope: str | None = None
    held: frozenset[str] | None = None
    for given in fields:
        key, equals, value = given.partition("=")
        if not equals or key not in ("roles", "scope"):
            raise TokensFileError(
                f"{at}: after the token a line may give only `roles=NAME,...` and `scope=agent|person|both`"
            )
        if key == "scope":
            if scope is not None or value not in SCOPES:
                raise TokensFileError(f"{at}: `scope=` is given once, as agent, person or both")
            scope = value
        else:
            names = value.split(",")
            if held is not None or not all(ROLE.match(n) for n in names):
                raise TokensFileError(
                    f"{at}: `roles=` is given once, as names of letters, digits or . _ @ + - split by commas"
                )
            held = frozenset(names)
    return scope or BOTH, held or frozenset()


def new_token() -> str:
    return secrets.token_urlsafe(32)  # 256 random bits


def token_line(name: str, token: str, *, scope: str | None = None, roles: tuple[str, ...] = ()) -> str:
    """The tokens-file line for `name` holding `token`: its hash, never the token."""
    line = f"{name} {HASH_PREFIX}{hashlib.sha256(token.encode('utf-8')).hexdigest()}"
    if roles:
        line += " roles=" + ",".join(roles)
    return line + (f" scope={scope}" if scope else "")


def bearer(authorization: str) -> str | None:
    """The token of an `Authorization: Bearer <token>` header (scheme in any case)."""
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None
