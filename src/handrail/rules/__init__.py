"""Validation rules: compiled once into closures (contains, regex, length, JSON Schema,
and/or/not), what a schema rule may cost, and the validators generated ahead of time."""
