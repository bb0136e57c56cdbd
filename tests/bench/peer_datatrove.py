"""datatrove 0.10.1 running the benchmark's pipeline: the peer side of tests/bench/run.py.

Run in its own process (run.py does it, with tests/bench on PYTHONPATH so that
datatrove's forkserver workers import the classes below by name):

    python -c "import peer_datatrove as p; p.main()" CONFIG.json

Pipeline, each a LocalPipelineExecutor with the same tasks and workers as ours:
  1. JsonlReader -> LanguageFilter (text) -> Gopher repetition + quality (text)
     -> JsonlWriter -> MinhashDedupSignature
  2. MinhashDedupBuckets   3. MinhashDedupCluster
  4. JsonlReader -> MinhashDedupFilter -> DocumentTokenizer (+ a list of kept ids)
Writes CONFIG["result"]: wall and CPU seconds per executor, datatrove's own per-step
seconds (summed over tasks), the peak memory of the driver and of the workers.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

import datatrove.utils.hashes.xxhash as datatrove_xxhash
import xxhash
from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep
from datatrove.pipeline.filters import (
    GopherQualityFilter,
    GopherRepetitionFilter,
    LanguageFilter,
)


# Workaround, benchmark only: datatrove 0.10.1 hands str to xxhash, and xxhash >= 4
# refuses str ("Strings must be encoded before hashing"). Same hash of the UTF-8 bytes.
def xxhash32(data: str | bytes) -> int:
    return xxhash.xxh32_intdigest(data.encode() if isinstance(data, str) else data)


def xxhash64(data: str | bytes) -> int:
    return xxhash.xxh64_intdigest(data.encode() if isinstance(data, str) else data)


datatrove_xxhash.xxhash32 = xxhash32
datatrove_xxhash.xxhash64 = xxhash64


# Language ID and Gopher apply to text documents only, as in our manifest (code
# documents pass through): the same scoping our runner's `text:` sections give.
class TextLanguageFilter(LanguageFilter):
    def filter(self, doc: Document) -> bool:
        return doc.metadata.get("kind") != "text" or super().filter(doc)


class TextGopherRepetition(GopherRepetitionFilter):
    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        return True if doc.metadata.get("kind") != "text" else super().filter(doc)


class TextGopherQuality(GopherQualityFilter):
    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        return True if doc.metadata.get("kind") != "text" else super().filter(doc)


class KeptIds(PipelineStep):
    """Records the ids that reach it (for the kept-set comparison); passes documents on."""

    name = "kept ids"

    def __init__(self, folder: str) -> None:
        super().__init__()
        self.folder = folder

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        ids = []
        for doc in data:
            ids.append(doc.id)
            yield doc
        Path(self.folder).mkdir(parents=True, exist_ok=True)
        (Path(self.folder) / f"{rank:05d}.txt").write_text("".join(i + "\n" for i in ids))


def _cpu() -> float:
    own, children = (resource.getrusage(w) for w in (resource.RUSAGE_SELF,
                                                      resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def peak_rss_mb() -> float:
    """This process's own peak RSS. Not ru_maxrss: Linux carries that over fork and exec,
    so a process started by a big parent reports at least the parent's peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _step_seconds(logs: Path) -> dict[str, float]:
    """datatrove's own timing of each pipeline step, summed over the tasks."""
    merged = json.loads((logs / "stats.json").read_text())
    return {entry["name"]: round(entry["time_stats"]["total"], 3) for entry in merged
            if isinstance(entry.get("time_stats"), dict)}


def main() -> None:
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup import (
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
        MinhashDedupSignature,
    )
    from datatrove.pipeline.dedup.minhash import MinhashConfig
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.tokens import DocumentTokenizer
    from datatrove.pipeline.writers import JsonlWriter

    config: dict[str, Any] = json.loads(Path(sys.argv[1]).read_text())
    work, tasks, workers = Path(config["work"]), config["tasks"], config["workers"]
    minhash = MinhashConfig(n_grams=config["ngram"], num_buckets=config["bands"],
                            hashes_per_bucket=config["rows"], seed=config["seed"])
    language = TextLanguageFilter(languages=["en"], language_threshold=config["lid_threshold"])
    language.model.MODEL_URL = config["lid_model"]  # the same lid.176.ftz, no download

    def executor(name: str, pipeline: list, count: int) -> LocalPipelineExecutor:
        # fork, not datatrove's default forkserver: pool workers are then this process's
        # children, so their CPU time and peak memory show in RUSAGE_CHILDREN.
        return LocalPipelineExecutor(pipeline, tasks=count, workers=min(workers, count),
                                     logging_dir=str(work / "logs" / name),
                                     skip_completed=False, start_method="fork")

    stages = [
        ("1-read+filters+signature", executor("1", [
            JsonlReader(config["corpus"], glob_pattern="*/*.jsonl", recursive=True),
            language, TextGopherRepetition(),
            TextGopherQuality(max_non_alpha_words_ratio=config["max_non_alpha_words_ratio"]),
            JsonlWriter(str(work / "filtered"), compression=None),
            MinhashDedupSignature(str(work / "signatures"), config=minhash),
        ], tasks)),
        ("2-minhash buckets", executor("2", [
            MinhashDedupBuckets(str(work / "signatures"), str(work / "buckets"), config=minhash),
        ], minhash.num_buckets)),
        ("3-minhash cluster", executor("3", [
            MinhashDedupCluster(str(work / "buckets"), str(work / "remove_ids"), config=minhash),
        ], 1)),
        ("4-read+filter+tokenize", executor("4", [
            JsonlReader(str(work / "filtered")),
            MinhashDedupFilter(str(work / "remove_ids")),
            KeptIds(str(work / "kept")),
            DocumentTokenizer(str(work / "tokens"), tokenizer_name_or_path=config["tokenizer"],
                              eos_token="</s>"),
        ], tasks)),
    ]
    result: dict[str, Any] = {"executors": {}, "steps": {}}
    started = time.perf_counter()
    for name, run in stages:
        wall, cpu = time.perf_counter(), _cpu()
        run.run()
        result["executors"][name] = {"seconds": round(time.perf_counter() - wall, 3),
                                     "cpu_seconds": round(_cpu() - cpu, 3)}
        result["steps"][name] = _step_seconds(work / "logs" / name.split("-")[0])
        if name.startswith("1"):
            # Rank r of stage 4 must read the file rank r wrote (its signatures' order);
            # a rank whose documents were all dropped wrote none: give it an empty one.
            for rank in range(tasks):
                (work / "filtered" / f"{rank:05d}.jsonl").touch()
    result["total"] = round(time.perf_counter() - started, 3)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    result["peak_driver_rss_mb"] = round(peak_rss_mb(), 1)
    result["peak_worker_rss_mb"] = round(children.ru_maxrss / 1024, 1)
    Path(config["result"]).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
