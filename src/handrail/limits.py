"""Default limits, in one place (each is configurable where it applies)."""

MAX_FILE_BYTES = 1_000_000  # a workflow file larger than this is refused
MAX_LINE_BYTES = 4 * 1024 * 1024  # one JSON-RPC message on stdio or over HTTP
