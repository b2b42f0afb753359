"""Where notifications go, and the settings that shape them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import urlsplit

from handrail.notify import FAILURES_IN_A_ROW, STUCK_AFTER_S


class Format(StrEnum):
    JSON = "json"
    SLACK = "slack"
    TEAMS = "teams"


class TargetError(ValueError):
    """A --notify value that is not a receiver handrail can post to."""


@dataclass(frozen=True, slots=True)
class Target:
    spec: str  # as given: `slack:https://...`, `teams:https://...` or `https://...`
    format: Format
    url: str

    @classmethod
    def parse(cls, spec: str) -> Target:
        text = spec.strip()
        kind, url = Format.JSON, text
        for prefix in (Format.SLACK, Format.TEAMS):
            if text.lower().startswith(f"{prefix}:"):
                kind, url = prefix, text[len(prefix) + 1 :]
        try:
            parts = urlsplit(url)
        except ValueError as exc:
            raise TargetError(f"{spec!r} is not a URL: {exc}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise TargetError(
                f"{spec!r} is not an http(s) URL; write https://host/path, slack:https://... or teams:https://..."
            )
        return cls(text, kind, url)

    @classmethod
    def parse_all(cls, specs: Iterable[str]) -> tuple[Target, ...]:
        """The receivers `specs` name, each once, in the order first given."""
        return tuple(dict.fromkeys(cls.parse(spec) for spec in specs))


def shown(spec: str) -> str:
    """A receiver as it may be shown (logs, `handrail runs show`, the dashboard): its kind,
    scheme and host. A webhook URL's path is often its secret (Slack's, Teams')."""
    kind, url = "", spec
    for prefix in (Format.SLACK, Format.TEAMS):
        if spec.lower().startswith(f"{prefix}:"):
            kind, url = f"{prefix}:", spec[len(prefix) + 1 :]
    try:
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"
    except ValueError:
        return kind + "(a URL that cannot be read)"
    rest = url[len(f"{parts.scheme}://{parts.netloc}") :]
    return kind + origin + ("/..." if rest.strip("/") else "")


@dataclass(frozen=True, slots=True)
class NotifyConfig:
    targets: tuple[Target, ...]
    secret: str = ""  # empty: requests are not signed
    public_url: str = ""  # where a person opens the dashboard; empty: the server's own address
    stuck_after: float = STUCK_AFTER_S
    failures_in_a_row: int = FAILURES_IN_A_ROW

    def link(self, run_id: str, dashboard_url: str | None) -> str | None:
        base = self.public_url or dashboard_url
        return f"{base.rstrip('/')}/runs/{run_id}" if base else None


def parse_duration(text: str) -> float:
    """`90`, `90s`, `30m`, `2h` or `1d` as seconds (ValueError naming the text otherwise)."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    word = text.strip().lower()
    scale = units.get(word[-1:], 0)
    try:
        value = float(word[:-1] if scale else word) * (scale or 1)
    except ValueError:
        value = -1
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{text!r} is not a duration: write seconds, or 90s, 30m, 2h, 1d")
    return value
