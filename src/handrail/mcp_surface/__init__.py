"""The optional parts of MCP a client may use beyond tools, resources and prompts:
log notifications (`logging/setLevel`), argument completion (`completion/complete`)
and resource subscriptions (`resources/subscribe`). `protocol.py` dispatches to them;
none of them does I/O: what they send goes through the sink the transport gives."""
