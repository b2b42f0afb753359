"""Webhook notifications of what happens to runs (spec/notify.md): where they go
(`targets`), what a run's events notify (`events`), the payload each kind of receiver
reads (`formats`), the signature (`signing`), one POST (`send`) and the worker that
delivers the store's outbox (`worker`)."""

from __future__ import annotations

# the settings' defaults, here for the command line's options, which load none of the rest
STUCK_AFTER_S = 30 * 60.0  # an open run idle this long is reported stuck
FAILURES_IN_A_ROW = 3  # the same check failing this many times in a row is reported
