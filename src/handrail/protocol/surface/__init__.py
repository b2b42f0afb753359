"""What MCP offers beyond framing and lifecycle, registered into the protocol's method
tables by `surface.Surface`: tools (`tool_methods.py`), resources (`resources.py`), prompts
(`prompts.py`), the prose a model reads (`texts.py`), log notifications
(`logging_bridge.py`), argument completion (`completion.py`) and resource
subscriptions (`subscriptions.py`). None of them does I/O: what they send goes
through the sink the transport gives."""
