"""The names of every file the MinHash phases write under the step's work folder.

Declared once: the stage builds each task's output list from here and hands the
same paths to the task that writes them, so a resumed run checks exactly the
files a task wrote (a name spelled twice could drift, and resume would then
quietly rerun or skip work).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import storage


def _part(i: int) -> str:
    return f"part-{i:04d}.parquet"


@dataclass(frozen=True)
class WorkFiles:
    root: str

    def meta(self, shard: str) -> str:
        """Per shard: (key, id, stars, license_rank, shingles) of its signed documents."""
        return storage.join(self.root, "meta", f"{shard}.parquet")

    def bands(self, shard: str, part: int) -> str:
        """Per shard and band partition: (band, bucket, key)."""
        return storage.join(self.root, "bands", shard, _part(part))

    def shingles(self, shard: str, part: int) -> str:
        """Per shard and document partition (with verification): shingle sets."""
        return storage.join(self.root, "shingles", shard, _part(part))

    def pairs(self, band_part: int, part: int) -> str:
        """Candidate pairs found in one band partition, split by a's document partition."""
        return storage.join(self.root, "pairs", f"part-{band_part:04d}", f"qa-{part:04d}.parquet")

    def shipped_pairs(self, source: int, to: int) -> str:
        """Pairs of document partition `source`, sent to the partition holding b."""
        return storage.join(self.root, "verify", f"from-{source:04d}", f"pairs-{to:04d}.parquet")

    def shipped_sets(self, source: int, to: int) -> str:
        """The sets of those pairs' a documents, sent along."""
        return storage.join(self.root, "verify", f"from-{source:04d}", f"sets-{to:04d}.parquet")

    def edges(self, part: int) -> str:
        """Verified pairs (a, b, jaccard) of one document partition."""
        return storage.join(self.root, "edges", _part(part))

    def decisions(self, part: int) -> str:
        """(shard, id, kept_id, cluster, size) of the removed documents of the shards
        with index % partitions == part."""
        return storage.join(self.root, "decisions", _part(part))

    def clusters(self) -> str:
        return storage.join(self.root, "clusters.json")

    def earlier_pairs(self, band_part: int, part: int) -> str:
        """Candidates against earlier runs (b, run, a) found in one band partition, split
        by the document partition of b (this run's document)."""
        return storage.join(self.root, "earlier", "pairs", f"part-{band_part:04d}",
                            f"qb-{part:04d}.parquet")

    def earlier_edges(self, part: int) -> str:
        """Verified candidates against earlier runs (b, run, a, jaccard) of partition `part`."""
        return storage.join(self.root, "earlier", "edges", _part(part))
