"""A person's passkeys: registering one (WebAuthn's registration ceremony, through the
`webauthn` library), listing and removing them, and the options an approval's
assertion is asked with. The run layer keeps only public keys, in the store."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from handrail.model.errors import InvalidParams
from handrail.model.runs import ACTIVE_STATUSES
from handrail.runs.ledger import Ledger
from handrail.runs.presence import b64url, gate_watches, unb64url
from handrail.store.passkeys import Passkey
from handrail.store.rows import now

RP_NAME = "handrail"
OPEN_RUNS_READ = 500  # the open runs a registration on a shared channel looks at
TIMEOUT_MS = 120_000


class Passkeys:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def of(self, person: str) -> list[Passkey]:
        return self.ledger.store.passkeys(person)

    def registration_options(self, person: str, rp_id: str, challenge: bytes) -> str:
        """The JSON `navigator.credentials.create` is given: a resident, user-verified
        key for `person` on `rp_id`, none of their keys registered already."""
        from webauthn import generate_registration_options, options_to_json  # lazy: only for passkeys
        from webauthn.helpers.structs import (  # lazy: as the line above
            AuthenticatorSelectionCriteria,
            PublicKeyCredentialDescriptor,
            ResidentKeyRequirement,
            UserVerificationRequirement,
        )

        options = generate_registration_options(
            rp_id=rp_id,
            rp_name=RP_NAME,
            user_name=person,
            user_id=hashlib.sha256(person.encode()).digest()[:16],
            challenge=challenge,
            timeout=TIMEOUT_MS,
            authenticator_selection=AuthenticatorSelectionCriteria(
                resident_key=ResidentKeyRequirement.PREFERRED,
                user_verification=UserVerificationRequirement.REQUIRED,
            ),
            exclude_credentials=[
                PublicKeyCredentialDescriptor(id=unb64url(k.credential_id)) for k in self.of(person)
            ],
        )
        text: str = options_to_json(options)
        return text

    def register(
        self,
        person: str,
        credential: Mapping[str, Any],
        challenge: bytes,
        rp_id: str,
        origin: str,
        name: str,
    ) -> Passkey:
        """Check a registration response and keep its public key as `person`'s."""
        from webauthn import verify_registration_response  # lazy: only for passkeys
        from webauthn.helpers.exceptions import InvalidRegistrationResponse  # lazy: as above

        try:
            verified = verify_registration_response(
                credential=dict(credential),
                expected_challenge=challenge,
                expected_rp_id=rp_id,
                expected_origin=origin,
                require_user_verification=True,
            )
        except (InvalidRegistrationResponse, ValueError, KeyError, TypeError) as exc:
            raise InvalidParams(data={"details": f"the passkey was not registered: {exc}"}) from None
        key = Passkey(
            credential_id=b64url(verified.credential_id),
            person=person,
            public_key=b64url(verified.credential_public_key),
            sign_count=int(verified.sign_count),
            rp_id=rp_id,
            name=name.strip()[:80] or "passkey",
            created_at=now(),
        )
        self.ledger.store.add_passkey(key)
        return key

    def watched_open_run(self) -> str | None:
        """An open run the gate watches, if any: while an agent works beside the person,
        a channel they share (the dashboard without tokens) registers no passkey, since
        a program can answer WebAuthn's registration as well as an authenticator."""
        store = self.ledger.store
        for run in store.list_runs(statuses=list(ACTIVE_STATUSES), limit=OPEN_RUNS_READ):
            if gate_watches(store.events(run.id)):
                return run.id
        return None

    def remove(self, person: str, credential_id: str) -> bool:
        return self.ledger.store.remove_passkey(person, credential_id)

    def assertion_options(self, person: str, rp_id: str, challenge: bytes) -> str:
        """The JSON `navigator.credentials.get` is given for a decision's challenge."""
        from webauthn import generate_authentication_options, options_to_json  # lazy: only for passkeys
        from webauthn.helpers.structs import (  # lazy: as the line above
            PublicKeyCredentialDescriptor,
            UserVerificationRequirement,
        )

        keys = [k for k in self.of(person) if k.rp_id == rp_id]
        options = generate_authentication_options(
            rp_id=rp_id,
            challenge=challenge,
            timeout=TIMEOUT_MS,
            allow_credentials=[PublicKeyCredentialDescriptor(id=unb64url(k.credential_id)) for k in keys],
            user_verification=UserVerificationRequirement.REQUIRED,
        )
        text: str = options_to_json(options)
        return text


def credential_of(text: str) -> dict[str, Any] | None:
    """A credential the browser posted as JSON; None when it is not an object."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
