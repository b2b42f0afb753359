"""Webhook notifications of what happens to runs (spec/notify.md): where they go
(`targets`), what a run's events notify (`events`), the payload each kind of receiver
reads (`formats`), the signature (`signing`), one POST (`send`) and the worker that
delivers the store's outbox (`worker`)."""
