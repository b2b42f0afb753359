"""Cross-cutting: what many folders share (real `handrail start`/`serve` processes, wire shapes)."""
