"""Cross-cutting: a token per person end to end, through the cli, HTTP, the service and runs."""
