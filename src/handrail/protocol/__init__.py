"""JSON-RPC framing, the MCP lifecycle and revisions, the method table, and the MCP
surface (tools, resources, prompts, completion, logging, subscriptions). No I/O."""
