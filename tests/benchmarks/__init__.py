"""Cross-cutting: the scripts of benchmarks/ (not src/) give right answers; no timing is asserted."""
