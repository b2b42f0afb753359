"""The signature a receiver checks, computed here from spec/notify.md's words alone
(HMAC-SHA256 of `id.timestamp.body`, base64, after `v1,`) and by the Standard Webhooks
library, never by handrail's own code."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time

import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from handrail.notify.signing import headers

BODY = b'{"id":"ntf_1","type":"run.approved"}'


def test_the_signature_is_the_hmac_of_id_timestamp_and_body_as_the_spec_writes_it() -> None:
    sent = headers("s3cret", "ntf_1", 1_800_000_000, BODY)
    expected = hmac.new(b"s3cret", b"ntf_1.1800000000." + BODY, hashlib.sha256).digest()
    assert sent["webhook-signature"] == "v1," + base64.b64encode(expected).decode()
    assert sent["webhook-id"] == sent["Idempotency-Key"] == "ntf_1"
    assert sent["webhook-timestamp"] == "1800000000"


def test_the_standard_webhooks_library_accepts_a_signed_notification_and_refuses_a_changed_one() -> None:
    now = int(time.time())
    sent = headers("s3cret", "ntf_1", now, BODY)
    receiver = Webhook("whsec_" + base64.b64encode(b"s3cret").decode())
    assert receiver.verify(BODY, sent) == {"id": "ntf_1", "type": "run.approved"}
    with pytest.raises(WebhookVerificationError):
        receiver.verify(BODY.replace(b"approved", b"declined"), sent)


def test_a_whsec_secret_is_read_as_the_base64_of_its_key_as_standard_webhooks_writes_secrets() -> None:
    key = b"\x00\x01binary key"
    secret = "whsec_" + base64.b64encode(key).decode()
    sent = headers(secret, "ntf_2", 1_800_000_000, BODY)
    expected = hmac.new(key, b"ntf_2.1800000000." + BODY, hashlib.sha256).digest()
    assert sent["webhook-signature"] == "v1," + base64.b64encode(expected).decode()


def test_without_a_secret_nothing_is_signed() -> None:
    assert "webhook-signature" not in headers("", "ntf_3", 1_800_000_000, BODY)


def test_the_receivers_snippet_in_the_spec_verifies_a_signature_and_refuses_a_changed_body() -> None:
    from tests.conftest import ROOT

    spec = (ROOT / "spec" / "notify.md").read_text("utf-8")
    (snippet,) = [block for block in spec.split("```python\n")[1:] if "def verified" in block]
    scope: dict[str, object] = {}
    exec(snippet.split("```")[0], scope)  # the spec's own words, run as a receiver would
    verified = scope["verified"]
    assert callable(verified)
    sent = headers("s3cret", "ntf_9", int(time.time()), BODY)
    assert verified(b"s3cret", sent, BODY) is True
    assert verified(b"s3cret", sent, BODY + b" ") is False
    assert verified(b"other", sent, BODY) is False
    assert verified(b"s3cret", headers("s3cret", "ntf_9", int(time.time()) - 600, BODY), BODY) is False
