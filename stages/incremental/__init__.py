"""Incremental curation: the dedup index of a finished run, and deduplicating against it."""
