"""The dedup index of a finished run, and deduplicating a later run against it."""
