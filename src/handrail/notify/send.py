"""One POST of a notification (the standard library's HTTP client: short timeouts, no
redirects followed, nothing read past a short reply)."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from handrail.notify import formats, signing
from handrail.notify.targets import Target

TIMEOUT_S = 5.0  # connect, and each read, of one attempt
REPLY_READ = 2048  # bytes of a receiver's reply kept for the error


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A webhook that redirects is an error to show, not a POST to repeat elsewhere."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


def post(target: Target, notification_id: str, event: Mapping[str, Any], secret: str) -> str | None:
    """Send once; None when the receiver answered 2xx, else what went wrong, in words."""
    body = formats.body(target.format, notification_id, event)
    headers = signing.headers(secret, notification_id, int(time.time()), body)
    request = urllib.request.Request(target.url, data=body, headers=headers, method="POST")
    try:
        with _OPENER.open(request, timeout=TIMEOUT_S) as reply:
            reply.read(REPLY_READ)
            return None
    except urllib.error.HTTPError as exc:
        text = exc.read(REPLY_READ).decode("utf-8", "replace").strip()
        return f"HTTP {exc.code}" + (f": {' '.join(text.split())[:200]}" if text else "")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"cannot reach the receiver: {reason}"
