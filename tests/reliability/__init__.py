"""Cross-cutting: hostile input, limits and fuzzing against the whole server, not one module."""
