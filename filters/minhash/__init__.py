"""Shingling for MinHash: token shingles and their hashes."""
