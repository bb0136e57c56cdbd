"""`mixture.read: needed`: a run reads only the seeded prefix of units the mix will use.

Real inputs: standard-library code, and text sources of real English sentences
(help() topics, stdlib docstrings) drawn in seeded paragraphs, one jsonl file per
input unit so a test can place duplicates in chosen units of the seeded order.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from lemur_data.pipeline.budget import _prefix_for, possible_keys
from lemur_data.pipeline.sample import unit_order
from lemur_data.stages.readers.common import InputUnit
from tests.fixtures import fixture
from tests.realdata import STDLIB, perturbed_prose, write_jsonl
from tests.runs import NONDETERMINISTIC, run_build

SEED = 5
UNITS = 16
DOCS = 30  # documents per unit (one jsonl file each)


def order_of(source: str, count: int) -> list[int]:
    """Unit indices of `source` in the order a run reads them."""
    return [u.index for u in unit_order([InputUnit(source, i, {}) for i in range(count)], SEED)]


def write_units(folder: Path, docs_at: list[list[str]]) -> str:
    """One jsonl file per unit, in listing (= index) order."""
    folder.mkdir(parents=True, exist_ok=True)
    for index, texts in enumerate(docs_at):
        write_jsonl(folder / f"part-{index:03d}.jsonl", [{"text": t} for t in texts])
    return str(folder / "*.jsonl")


def manifest(text_glob: str, read: str, total: float = 120_000) -> dict[str, Any]:
    return {"name": "budget", "seed": SEED, "shard": {"max_docs": 60, "max_bytes": "1MB"},
            "sources": [
                {"name": "stdlib", "kind": "code", "reader": {
                    "type": "tree", "root": str(STDLIB), "include": ["json/*.py", "http/*.py"]}},
                {"name": "prose", "kind": "text", "lang": "en",
                 "reader": {"type": "jsonl", "paths": [text_glob]}}],
            "stages": [{"exact_dedup": {}}],
            "tokenizer": {},
            "mixture": {"total_tokens": total, "weights": {"code": 10, "text": 1}, "read": read,
                        "pilot_units": 1}}


def same_bytes(run: Path) -> dict[str, str]:
    """sha256 per run file, the run folder's own path (data_args.txt and the pack's
    outputs name absolute prefixes) written as RUN, so two folders compare."""
    return {name: hashlib.sha256(path.read_bytes().replace(str(run).encode(), b"RUN"))
            .hexdigest() for name, path in files(run).items()}


def files(run: Path) -> dict[str, Path]:
    return {str(p.relative_to(run)): p for p in sorted(run.rglob("*"))
            if p.is_file() and p.name not in NONDETERMINISTIC}


def kept_ids(run: Path, stats: dict[str, Any]) -> set[str]:
    return set(pq.read_table(run / stats["output"]["dir"], columns=["id"])
               .column("id").to_pylist())


def text_of(run: Path) -> dict[str, str]:
    """id -> text of every document the first step of `run` read (kept or removed)."""
    out: dict[str, str] = {}
    for folder in ("stages", "removed"):
        step = sorted((run / folder).glob("01-*"))[0]
        table = pq.read_table(step, columns=["id", "text"])
        out.update(zip(table.column("id").to_pylist(), table.column("text").to_pylist(),
                       strict=True))
    return out


def tokens_reused(run: Path, rounds: int) -> int:
    """Documents of the last round's tokenized shards that an earlier round's tokenized
    shards hold with the same text (whose ids the last round reused); checks every
    document's ids are those of encoding its text, reused or not."""
    from lemur_data.stages.tokenize.stage import earlier_ids, encode_documents
    from lemur_data.stages.tokenize.tokenizer import TokenizerConfig, load_tokenizer

    config = TokenizerConfig()
    tokenizer = load_tokenizer(config)
    reused = 0
    shards = sorted((run / "rounds" / str(rounds - 1) / "stages").glob("*tokenize/*.parquet"))
    assert shards
    for shard in shards:
        table = pq.read_table(shard, columns=["id", "text", "token_ids"])
        texts = table.column("text").to_pylist()
        assert table.column("token_ids").to_pylist() == encode_documents(
            tokenizer, texts, config).to_pylist()
        earlier = tuple(str(p) for r in reversed(range(rounds - 1))
                        for p in (run / "rounds" / str(r) / "stages").glob(
                            f"*tokenize/{shard.name}"))
        found = earlier_ids(earlier, table.column("id").to_pylist(), texts)
        reused += sum(at >= 0 for at in found[1]) if found else 0
    return reused


def test_the_last_round_is_given_earlier_rounds_token_ids(tmp_path: Path) -> None:
    """The tokenizing step of a round after the pilot is handed each shard's tokenized
    file of the earlier rounds (newest first), and no other step is."""
    from lemur_data.pipeline.manifest import parse_manifest
    from lemur_data.pipeline.planner import list_units, plan_run

    folder = write_units(tmp_path / "prose", [perturbed_prose(DOCS, seed=i) for i in range(3)])
    built = parse_manifest(manifest(folder, "needed"), base_dir=tmp_path)
    units = list_units(built)
    run = str(tmp_path / "run")
    pilot = plan_run(built, run, units, scope="rounds/0", documents_only=True)
    later = plan_run(built, run, units, scope="rounds/1", earlier_tokens=("B", pilot.tokens_dir))
    assert pilot.tokens_dir == f"{run}/rounds/0/stages/02-tokenize"
    assert later.tokens_dir == later.steps[-2].out_dir
    assert "tokenize" in later.steps[-2].stage_names
    for step in later.steps:
        for task in (t.run for phase in step.phases for t in phase.tasks):
            if step.out_dir != later.tokens_dir:
                assert getattr(task, "ctx", None) is None or task.ctx.earlier == ()
                continue
            shard = f"shard-{task.shard_id}.parquet"
            assert task.ctx.earlier == (f"B/{shard}", f"{pilot.tokens_dir}/{shard}")


@pytest.fixture(scope="module")
def late_duplicates(tmp_path_factory) -> Path:
    """Units 2-4 of the read order repeat the pilot's documents; the rest are new."""
    folder = tmp_path_factory.mktemp("late")
    texts = perturbed_prose(DOCS * UNITS, seed=1)
    order = order_of("prose", UNITS)
    docs_at: list[list[str]] = [[] for _ in range(UNITS)]
    for position, index in enumerate(order):
        start = 0 if 1 <= position <= 3 else position * DOCS  # the pilot's own texts
        docs_at[index] = texts[start:start + DOCS]
    write_units(folder / "prose", docs_at)
    return folder


def test_prefix_is_the_fewest_units_holding_the_share() -> None:
    assert _prefix_for([10, 10, 10, 10], 0.5) == 2
    assert _prefix_for([10, 10, 10, 10], 0.51) == 3
    assert _prefix_for([10, 10, 10, 10], 2.0) == 4


def test_pilot_is_sized_from_the_need_not_a_unit_count(tmp_path: Path) -> None:
    """Issue 30's mix: a small source under its target (read whole) and a 9-unit one
    the mix needs a tenth of: the pilot reads one unit of it, not four."""
    from lemur_data.pipeline.budget import expected_need_bytes, pilot_counts
    from lemur_data.pipeline.manifest import parse_manifest
    from lemur_data.pipeline.planner import list_units
    from tests.bench.bench_budget import stdlib_manifest

    # the test package from its fixture: the running Python may have none (Debian's)
    tests = fixture("libpython3.11-testsuite") / "usr/lib/python3.11/test"
    raw = stdlib_manifest("needed", 3e6, test_root=str(tests))
    parsed = parse_manifest(raw, base_dir=tmp_path)
    orders = {n: unit_order(us, parsed.seed) for n, us in list_units(parsed).items()}
    assert (len(orders["lib"]), len(orders["test"])) == (1, 9)
    need = expected_need_bytes(parsed, orders)
    test_bytes = sum(u.bytes_hint for u in orders["test"])
    # 600k target tokens x 1.15 x 3.5 bytes / 0.6 kept: about a quarter of test/
    assert 0.15 < need["test"] / test_bytes < 0.35
    assert need["lib"] > orders["lib"][0].bytes_hint  # more than it has: read whole
    assert pilot_counts(parsed, orders) == {"lib": 1, "test": 1}
    raw["mixture"]["pilot_units"] = 4  # the fixed count, when asked for
    fixed = parse_manifest(raw, base_dir=tmp_path)
    assert pilot_counts(fixed, orders) == {"lib": 1, "test": 4}


def test_a_source_feeds_the_components_its_documents_can_match() -> None:
    weights = {"code:Python": 6, "code": 4, "text": 1}
    # detected languages: Python files go to code:Python, the others to code
    assert possible_keys("stdlib", "code", None, weights) == {"code:Python", "code"}
    # a fixed language leaves one key, the most specific
    assert possible_keys("stack-python", "code", "Python", weights) == {"code:Python"}
    assert possible_keys("stack-c", "code", "C", weights) == {"code"}
    # a weight by source name takes its documents before any kind key
    assert possible_keys("wiki", "text", None, {"wiki": 1, "text": 2}) == {"wiki"}
    assert possible_keys("wiki", "text", "en", {"code": 1}) == set()


@pytest.mark.slow
def test_short_component_reads_a_further_round(ray_session, late_duplicates: Path,
                                               tmp_path: Path) -> None:
    raw = manifest(str(late_duplicates / "prose" / "*.jsonl"), "needed")
    result = run_build(raw, late_duplicates, tmp_path / "w1", workers=1)
    read = result.stats["read"]
    prose = read["sources"]["prose"]
    # the pilot's yield, applied to units that turn out to repeat it, falls short:
    # more rounds read on until the text target is met, not to the end of the source
    assert read["rounds"] >= 3, read
    assert 4 < prose["units_read"] < UNITS, prose
    assert prose["realized_yield_tokens_per_byte"] < prose["pilot_yield_tokens_per_byte"]
    text = next(c for c in result.stats["mixture"]["components"] if c["key"] == "text")
    assert text["available_tokens"] >= text["target_tokens"] and text["epochs"] <= 1
    assert result.stats["mixture"]["max_share_error"] < 0.005
    # units not read are not removed: the first stage saw exactly the units read
    ingest = result.stats["stages"][0]
    assert ingest["in"]["bytes"] == sum(s["bytes_read"] for s in read["sources"].values())
    assert ingest["by_source"]["prose"]["in"]["docs"] == DOCS * prose["units_read"]
    # the report and the card say how much of each source was used
    share = f"{prose['fraction_read']:.1%}"
    assert "Input read" in (tmp_path / "w1" / "report.html").read_text()
    card = (tmp_path / "w1" / "README.md").read_text()
    assert "Only what the mixture uses was read" in card and f"| prose | {share} |" in card
    # the last round's ids are exact, and it had earlier rounds' ids to reuse
    assert tokens_reused(tmp_path / "w1", read["rounds"]) > 0
    # determinism: 2 workers, and a run killed mid-way and resumed, give the same bytes
    run_build(raw, late_duplicates, tmp_path / "w2", workers=2)
    expected = same_bytes(tmp_path / "w1")
    assert same_bytes(tmp_path / "w2") == expected
    partial = tmp_path / "partial"
    shutil.copytree(tmp_path / "w1", partial)
    last = read["final_round"]
    for marker in sorted(m for m in partial.rglob("*.json") if "markers" in m.parts)[::2]:
        marker.unlink()
    shutil.rmtree(partial / last)
    shutil.rmtree(partial / "megatron")
    (partial / "stats.json").unlink()
    run_build(raw, late_duplicates, partial, workers=2)
    assert same_bytes(partial) == expected


@pytest.mark.slow
def test_needed_keeps_what_all_keeps_but_duplicates_of_unread_units(
        ray_session, tmp_path: Path) -> None:
    # Every tenth document is copied into another, random unit: some copies fall in
    # units `read: needed` never reads.
    texts = perturbed_prose(DOCS * UNITS, seed=2)
    rng = random.Random(3)
    docs_at = [texts[i * DOCS:(i + 1) * DOCS] for i in range(UNITS)]
    for i in range(0, len(texts), 10):
        docs_at[rng.randrange(UNITS)].append(texts[i])
    glob = write_units(tmp_path / "prose", docs_at)
    needed = run_build(manifest(glob, "needed"), tmp_path, tmp_path / "needed")
    everything = run_build(manifest(glob, "all"), tmp_path, tmp_path / "all")
    assert needed.stats["read"]["sources"]["prose"]["units_not_read"] > 0
    read_text, all_text = text_of(tmp_path / "needed"), text_of(tmp_path / "all")
    unread = {t for i, t in all_text.items() if i not in read_text}
    kept_needed = kept_ids(tmp_path / "needed", needed.stats)
    kept_all = kept_ids(tmp_path / "all", everything.stats) & set(read_text)
    differ = kept_needed ^ kept_all
    # the exception exists here (a copy kept by `all` lies in an unread unit) ...
    assert differ
    # ... and is the only difference: documents `needed` keeps because the copy that
    # `all` keeps instead was never read
    assert differ <= kept_needed - kept_all
    assert all(read_text[i] in unread for i in differ)


def test_plan_expects_to_read_the_share_each_component_needs(tmp_path: Path) -> None:
    from lemur_data.pipeline.estimate import KEPT_SHARE, TOKEN_BYTES, read_fractions
    from lemur_data.pipeline.manifest import parse_manifest

    raw = manifest("x.jsonl", "needed", total=11e9)
    raw["sources"].append({**raw["sources"][1], "name": "prose2"})
    sizes = {"stdlib": 10**10, "prose": 3 * 10**11, "prose2": 10**11}
    fractions = read_fractions(parse_manifest(raw, base_dir=tmp_path), sizes)
    text_tokens = 4 * 10**11 * KEPT_SHARE["text"] / TOKEN_BYTES
    # both text sources read the same share: enough for the text target plus margin
    assert fractions["prose"] == fractions["prose2"] == pytest.approx(1e9 * 1.15 / text_tokens)
    # code would need more than it has: read whole (and upsampled by the mix)
    assert fractions["stdlib"] == 1.0
    every = read_fractions(parse_manifest(manifest("x.jsonl", "all"), base_dir=tmp_path), sizes)
    assert set(every.values()) == {1.0}


def test_read_all_is_unchanged_and_fingerprints_differ(tmp_path: Path) -> None:
    from lemur_data.pipeline.manifest import parse_manifest

    raw = manifest("x.jsonl", "all")
    plain = json.loads(json.dumps(raw))
    for key in ("read", "pilot_units"):
        plain["mixture"].pop(key)
    # `read: all` is the default: the same manifest as one that never heard of it
    assert (parse_manifest(raw, base_dir=tmp_path).fingerprint()
            == parse_manifest(plain, base_dir=tmp_path).fingerprint())
    assert (parse_manifest(manifest("x.jsonl", "needed"), base_dir=tmp_path).fingerprint()
            != parse_manifest(raw, base_dir=tmp_path).fingerprint())
