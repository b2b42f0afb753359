"""The team's OpenID provider: who its ID tokens and access tokens name.

`handrail serve --oidc-issuer URL --oidc-client-id ID` (and the secret in
HANDRAIL_OIDC_CLIENT_SECRET) trusts one provider. Its discovery document and its
JWKS are fetched when first needed and kept; an unknown key id fetches the JWKS again,
at most once a minute, so a rotated key is picked up and a stream of forged key ids
costs one request a minute. Every answer is read with a size bound and a timeout.

A person's stable id is (issuer, subject), written `subject@issuer` without the
issuer's scheme; their name and email come from the claims, their roles from the
groups claim through `--oidc-roles ROLE=GROUP`. A bearer JWT for /mcp must be signed
by a key of the JWKS, name the issuer, the server's audience (its /mcp URL), and not
be expired (no leeway: the issuer's clock says when a token ends). Its `scope` says
where it is good, as a tokens file line's does: `agent`, `person`, or both.

Authlib's JOSE library (joserfc) checks the signatures and the claims; it is imported
only when a provider is configured.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from handrail.service.people import AGENT, BOTH, PERSON

MAX_DOCUMENT = 256 * 1024  # a discovery document or a JWKS is a few KiB
FETCH_SECONDS = 5.0
REFETCH_SECONDS = 60.0  # an unknown key id asks for the JWKS again no sooner than this
ALGORITHMS = ("RS256", "PS256", "ES256", "EdDSA")
MAX_PEOPLE = 10_000  # the roles and names remembered; the oldest is forgotten first


class ProviderError(Exception):
    """The provider cannot be asked, or answered something that is not usable."""


def fetch_json(url: str, data: bytes | None = None, headers: Mapping[str, str] | None = None) -> Any:
    """A JSON object from `url` (POST when `data`), bounded in size and time."""
    import urllib.request  # http.client and ssl: loaded only when a provider is asked

    if not url.lower().startswith(("https://", "http://")):
        raise ProviderError(f"{url!r} is not an http(s) URL")
    asked = urllib.request.Request(url, data=data, headers={"Accept": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(asked, timeout=FETCH_SECONDS) as answer:  # http(s) only: checked above
            body = answer.read(MAX_DOCUMENT + 1)
    except OSError as exc:
        raise ProviderError(f"{url}: {exc}") from None
    if len(body) > MAX_DOCUMENT:
        raise ProviderError(f"{url}: the answer is over {MAX_DOCUMENT} bytes")
    try:
        found = json.loads(body)
    except ValueError:
        raise ProviderError(f"{url}: the answer is not JSON") from None
    if not isinstance(found, dict):
        raise ProviderError(f"{url}: the answer is not a JSON object")
    return found


def parse_roles(items: tuple[str, ...]) -> dict[str, frozenset[str]]:
    """`ROLE=GROUP` items (repeatable, GROUP may be comma separated) as group -> roles."""
    groups: dict[str, frozenset[str]] = {}
    for item in items:
        role, _, named = item.partition("=")
        if not role.strip() or not named.strip():
            raise ValueError(f"--oidc-roles: expected ROLE=GROUP, found {item!r}")
        for group in named.split(","):
            if group.strip():
                groups[group.strip()] = groups.get(group.strip(), frozenset()) | {role.strip()}
    return groups


@dataclass(frozen=True)
class Person:
    id: str
    name: str
    email: str
    roles: frozenset[str]


@dataclass
class Provider:
    issuer: str
    client_id: str
    client_secret: str = ""
    audience: str = ""  # the resource /mcp JWTs must name; empty: /mcp takes no JWT
    groups: Mapping[str, frozenset[str]] = field(default_factory=dict)  # group -> handrail roles
    groups_claim: str = "groups"
    public_url: str = ""  # --public-url: where the provider sends the browser back; empty: the request's
    _discovery: dict[str, Any] | None = None
    _keys: Any = None
    _fetched: float = float("-inf")
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _people: OrderedDict[str, Person] = field(default_factory=OrderedDict)

    def metadata(self) -> dict[str, Any]:
        """The provider's discovery document (fetched once); its issuer must be ours."""
        if self._discovery is None:
            found = fetch_json(self.issuer.rstrip("/") + "/.well-known/openid-configuration")
            if found.get("issuer") != self.issuer:
                raise ProviderError(f"the discovery document names issuer {found.get('issuer')!r}")
            self._discovery = found
        return self._discovery

    def endpoint(self, name: str) -> str:
        value = self.metadata().get(name)
        if not isinstance(value, str):
            raise ProviderError(f"the discovery document has no {name}")
        return value

    def key_set(self, kid: str | None) -> Any:
        from joserfc.jwk import KeySet  # Authlib's JOSE: only a server with a provider loads it

        with self._lock:
            known = self._keys is not None and any(key.kid == kid for key in self._keys.keys)
            if not known and time.monotonic() - self._fetched >= REFETCH_SECONDS:
                self._fetched = time.monotonic()
                self._keys = KeySet.import_key_set(fetch_json(self.endpoint("jwks_uri")))
            if self._keys is None:
                raise ProviderError("the provider's keys are not known yet")
            return self._keys

    def claims(self, token: str, audience: str, **expected: Any) -> dict[str, Any]:
        """The claims of a JWT the provider signed for `audience`; ProviderError when it
        is not one (bad signature, issuer, audience, expiry, or `expected` claims)."""
        from joserfc import jwt  # Authlib's JOSE: only a server with a provider loads it
        from joserfc.errors import JoseError  # with jwt
        from joserfc.jws import extract_compact  # with jwt

        try:
            header = extract_compact(token.encode("ascii")).headers()
            decoded = jwt.decode(token, self.key_set(header.get("kid")), algorithms=list(ALGORITHMS))
            options: dict[str, Any] = {n: {"essential": True, "value": v} for n, v in expected.items()}
            jwt.JWTClaimsRegistry(
                iss={"essential": True, "value": self.issuer},
                aud={"essential": True, "value": audience},
                exp={"essential": True},
                sub={"essential": True},
                **options,
            ).validate(decoded.claims)
        except (JoseError, ValueError, UnicodeError) as exc:
            raise ProviderError(f"the token is not accepted: {exc}") from None
        return dict(decoded.claims)

    def person(self, claims: Mapping[str, Any]) -> Person:
        """The person `claims` name, remembered with the roles their groups give."""
        subject = str(claims["sub"])
        where = urlsplit(self.issuer)
        found = Person(
            id=f"{subject}@{where.netloc}{where.path.rstrip('/')}",
            name=str(claims.get("name") or claims.get("preferred_username") or subject),
            email=str(claims.get("email") or ""),
            roles=self.roles_of_groups(claims.get(self.groups_claim)),
        )
        self._keep(found)
        return found

    def remember(self, person: str, roles: frozenset[str]) -> None:
        """`person`'s roles as another replica read them from the groups claim."""
        with self._lock:
            known = self._people.get(person)
        self._keep(Person(person, known.name if known else person, known.email if known else "", roles))

    def _keep(self, found: Person) -> None:
        with self._lock:
            self._people[found.id] = found
            self._people.move_to_end(found.id)
            while len(self._people) > MAX_PEOPLE:
                self._people.popitem(last=False)

    def roles_of_groups(self, groups: Any) -> frozenset[str]:
        named = [groups] if isinstance(groups, str) else groups if isinstance(groups, list) else []
        known = [group for group in named if isinstance(group, str)]
        return frozenset(role for group in known for role in self.groups.get(group, ()))

    def roles_of(self, person: str) -> frozenset[str]:
        with self._lock:
            found = self._people.get(person)
        return found.roles if found is not None else frozenset()

    def with_tokens(self, tokens: Any) -> WithProvider:
        """The people of a tokens file (People, or None) and this provider's, as one."""
        return WithProvider(tokens, self)

    def access(self, token: str) -> tuple[str, str] | None:
        """(person, scope) of a bearer JWT for /mcp, or None when it is not one we accept."""
        if not self.audience or token.count(".") != 2:
            return None
        try:
            claims = self.claims(token, self.audience)
        except ProviderError:
            return None
        scopes = set(str(claims.get("scope", "")).split())
        scope = BOTH if {AGENT, PERSON} <= scopes else next((s for s in (AGENT, PERSON) if s in scopes), "")
        return (self.person(claims).id, scope) if scope else None


@dataclass(frozen=True)
class WithProvider:
    """The people a server knows: the tokens file's (if any), and whoever the provider's
    JWTs name. It answers as handrail.service.people.People does."""

    tokens: Any  # People | None
    provider: Provider

    def credential(self, token: str) -> tuple[str, str] | None:
        found = self.tokens.credential(token) if self.tokens is not None else None
        return found if found is not None else self.provider.access(token)

    def identify(self, token: str, *, scope: str | None = None) -> str | None:
        found = self.credential(token)
        if found is None or (scope is not None and found[1] not in (scope, BOTH)):
            return None
        return found[0]

    def roles_of(self, person: str) -> frozenset[str]:
        held = self.tokens.roles_of(person) if self.tokens is not None else frozenset()
        return frozenset(held | self.provider.roles_of(person))

    def resource_metadata(self) -> str:
        """Where /mcp's protected resource metadata is (RFC 9728), for WWW-Authenticate."""
        parts = urlsplit(self.provider.audience)
        return f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path.rstrip('/')}"
