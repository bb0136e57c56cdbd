"""`lemur-data inspect`, `explain` and `diff` on real runs of the demo's sample."""

from __future__ import annotations

import json
import os
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from lemur_data.filters.pii.find import find_pii
from lemur_data.filters.pii.redact import redact
from lemur_data.pipeline.cli import main
from lemur_data.stages.pii import Pii
from lemur_data.stages.syntax import Syntax
from tests.conftest import STDLIB


def _run(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _jsonl(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _removed(run: Path) -> dict[str, dict[str, Any]]:
    """Every removed document of a run, read with pyarrow alone: id -> row."""
    rows = {}
    for path in sorted((run / "removed").rglob("*.parquet")):
        for row in pq.read_table(path, columns=["id", "reason", "text", "path"]).to_pylist():
            rows[row["id"]] = row
    return rows


def _kept_ids(run: Path) -> set[str]:
    stats = json.loads((run / "stats.json").read_text())
    folder = run / stats["output"]["dir"]
    return {i for p in folder.glob("*.parquet")
            for i in pq.read_table(p, columns=["id"]).column("id").to_pylist()}


def test_every_workbench_command_has_help(capsys: pytest.CaptureFixture) -> None:
    for command, words in (("inspect", "--run-dir"), ("explain", "ID|PATH"),
                           ("diff", "RUN_A RUN_B")):
        with pytest.raises(SystemExit) as exit_info:
            main([command, "--help"])
        assert exit_info.value.code == 0
        out = capsys.readouterr().out
        assert f"usage: lemur-data {command}" in out and words in out


def test_syntax_locates_the_error_of_a_damaged_real_file() -> None:
    lines = (STDLIB / "json" / "decoder.py").read_text().splitlines(keepends=True)
    target = next(i for i, line in enumerate(lines) if i > 100 and line.rstrip().endswith(")"))
    lines[target] = lines[target].rstrip()[:-1] + "\n"  # a closing bracket lost
    text = "".join(lines)
    spans = Syntax.locate({"text": text, "lang": "Python", "syntax_checked": True}, {})
    assert spans, "the parser finds the damage"
    first_line = text.count("\n", 0, spans[0].start) + 1
    assert target + 1 <= first_line + 1 and first_line <= target + 3, (first_line, target)
    assert Syntax.locate({"text": (STDLIB / "json" / "decoder.py").read_text(),
                          "lang": "Python", "syntax_checked": True}, {}) == []


def test_pii_locates_its_redactions_in_a_real_file() -> None:
    text = (STDLIB / "smtplib.py").read_text()
    found = find_pii(text)
    assert found, "smtplib's docstrings hold addresses"
    redacted = redact(text, found)
    spans = Pii.locate({"text": redacted, "pii_emails": len(found)}, {})
    assert spans and all(redacted[s.start:s.end].startswith("<") for s in spans)


@pytest.mark.slow
def test_inspect_shows_seeded_examples_of_every_reason(
        demo_sample: Path, capsys: pytest.CaptureFixture) -> None:
    stats = json.loads((demo_sample / "stats.json").read_text())
    expected = {reason: counts["docs"] for stage in stats["stages"]
                for reason, counts in stage["removed_by_reason"].items()}
    code, out, _ = _run(capsys, "inspect", "--run-dir", str(demo_sample), "--format", "jsonl",
                        "-n", "2")
    assert code == 0
    items = _jsonl(out)
    groups = {item["group"]["reason"]: item["group_docs"] for item in items}
    assert groups == expected  # every reason, with its count in stats.json
    per_group = Counter(item["group"]["reason"] for item in items)
    assert all(n == min(2, expected[reason]) for reason, n in per_group.items())
    removed = _removed(demo_sample)
    for item in items:
        doc = removed[item["id"]]
        assert item["reason"] == doc["reason"] == item["group"]["reason"]
        assert item["path"] == doc["path"]
        assert item["first_lines"] == [line[:160] + ("…" if len(line) > 160 else "")
                                       for line in doc["text"].splitlines()[:6]]
    # the same command shows the same examples; another seed others
    assert _run(capsys, "inspect", "--run-dir", str(demo_sample), "--format", "jsonl",
                "-n", "2")[1] == out
    other = _jsonl(_run(capsys, "inspect", "--run-dir", str(demo_sample), "--format", "jsonl",
                        "-n", "2", "--seed", "99")[1])
    big = [r for r, n in expected.items() if n > 4]
    assert big and {i["id"] for i in other if i["group"]["reason"] in big} != \
        {i["id"] for i in items if i["group"]["reason"] in big}

    # kept documents by source; redactions and syntax errors marked where they are
    code, out, _ = _run(capsys, "inspect", "--run-dir", str(demo_sample), "--outcome", "kept",
                        "--by", "source", "-n", "40", "--format", "jsonl")
    kept = _jsonl(out)
    assert {i["group"]["source"]: i["group_docs"] for i in kept} == \
        {s: c["docs"] for s, c in stats["output"]["by_source"].items()}
    marked = [loc for item in kept for loc in item["locations"]]
    assert stats["stages"][-2]["totals"]["pii_emails"] == 0 or any(
        ">>><EMAIL><<<" in loc["marked"] for loc in marked)
    text = _run(capsys, "inspect", "--run-dir", str(demo_sample), "--stage", "quality",
                "-n", "1")[1]
    assert "removed by quality:" in text and "    | " in text


@pytest.mark.slow
def test_explain_follows_one_document_through_every_stage(
        demo_sample: Path, capsys: pytest.CaptureFixture) -> None:
    stats = json.loads((demo_sample / "stats.json").read_text())
    names = [s["name"] for s in stats["stages"]]
    folder = demo_sample / stats["output"]["dir"]
    kept = [row for p in sorted(folder.glob("*.parquet"))
            for row in pq.read_table(p).drop_columns(["text", "token_ids"]).to_pylist()]
    plain = next(r for r in kept if r.get("repo_files") is None and r["path"])
    code, out, _ = _run(capsys, "explain", "--run-dir", str(demo_sample), plain["path"])
    assert code == 0 and "kept in the output" in out.splitlines()[0]
    shown = [line.split()[0] for line in out.splitlines()[1:] if line.startswith("  ")
             and not line.startswith("    ")]
    assert [n for n in shown if n in names] == names  # every stage, in run order
    assert f"{plain['tokens']:,} tokens" in out
    # the Megatron shard and token range it names hold exactly its tokens
    import re

    import numpy as np

    dtype = np.dtype(json.loads((demo_sample / "megatron" / "summary.json").read_text())["dtype"])
    places = re.findall(r"pass \d+: megatron/(\S+\.bin) tokens ([\d,]+)-([\d,]+)", out)
    ids = next(pq.read_table(p, columns=["id", "token_ids"]).to_pylist()
               for p in sorted(folder.glob("*.parquet"))
               if plain["id"] in pq.read_table(p, columns=["id"]).column("id").to_pylist())
    token_ids = next(r["token_ids"] for r in ids if r["id"] == plain["id"])
    whole = 0
    for name, start, end in places:
        tokens = np.memmap(demo_sample / "megatron" / name, dtype=dtype, mode="r")
        begin, stop = int(start.replace(",", "")), int(end.replace(",", ""))
        if stop - begin == len(token_ids):  # a pass that took the whole document
            assert tokens[begin:stop].tolist() == token_ids
            whole += 1
    assert whole or "not drawn into the mix" in out

    removed = _removed(demo_sample)
    quality = next(r for r in removed.values() if r["reason"].startswith("quality:"))
    out = _run(capsys, "explain", "--run-dir", str(demo_sample), quality["id"])[1]
    assert f"removed ({quality['reason']})" in out and "not reached" in out
    assert "preset" in out  # its metrics against the thresholds

    code, _, err = _run(capsys, "explain", "--run-dir", str(demo_sample), "no/such/file.py")
    assert code == 2 and "is no document of" in err
    stats = json.loads((demo_sample / "stats.json").read_text())
    assert f"{stats['input']['docs']:,} documents were read" in err  # read, not made


_IMPORTS_PROBE = """
import contextlib, io, sys
from lemur_data.pipeline.cli import main
run, doc = sys.argv[1:]
with contextlib.redirect_stdout(io.StringIO()):
    codes = [main(["inspect", "--run-dir", run, "-n", "1"]), main(["diff", run, run]),
             main(["explain", "--run-dir", run, doc])]
print(codes, sorted(m for m in ("polars", "pandas", "matplotlib", "ray", "detect_secrets")
                   if m in sys.modules))
"""


@pytest.mark.slow
def test_the_workbench_imports_no_dataframe_library_plot_or_ray(demo_sample: Path) -> None:
    """What makes `inspect`, `explain` and `diff` answer in a second: polars (the stage
    modules of exact_dedup and repo_context, whose hooks explain calls), pandas
    (pyarrow's probe of its first array), matplotlib, Ray and detect-secrets (the pii
    stage's rules; its hooks need only the placeholders) are never imported."""
    import subprocess
    import sys

    kept = sorted(_kept_ids(demo_sample))[0]  # every stage's hook explains a kept document
    out = subprocess.run([sys.executable, "-c", _IMPORTS_PROBE, str(demo_sample), kept],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[0, 0, 0] []", out


@pytest.mark.slow
def test_explain_names_the_surviving_copy_of_a_near_duplicate(
        demo_sample: Path, capsys: pytest.CaptureFixture) -> None:
    """Acceptance: a near duplicate's explanation names a surviving copy that the kept
    output holds (itself, or the repository document it joined)."""
    removed = _removed(demo_sample)
    near = sorted(i for i, r in removed.items() if r["reason"] == "minhash:near_duplicate")
    assert near, "the demo's sample has near duplicates"
    kept = _kept_ids(demo_sample)
    for doc_id in near[:3]:
        code, out, _ = _run(capsys, "explain", "--run-dir", str(demo_sample), "--format",
                            "json", doc_id)
        assert code == 0
        decisions = json.loads(out)["decisions"]
        minhash = next(d for d in decisions if d["stage"] == "minhash")
        assert minhash["verdict"].startswith("removed (minhash:near_duplicate)")
        survivor = minhash["lines"][0].split(" of ", 1)[1].split(",")[0]
        assert "survived by keep order" in minhash["lines"][0]
        assert survivor not in removed or removed[survivor]["reason"] == "repo_context:merged"
        # the survivor is in the output, or joined a repository document that is
        follow = survivor
        if survivor in removed or survivor not in kept:  # merged, or hosts a repo document
            out = _run(capsys, "explain", "--run-dir", str(demo_sample), "--format", "json",
                       survivor)[1]
            repo = next(d for d in json.loads(out)["decisions"] if d["stage"] == "repo_context")
            follow = repo["lines"][0].split("repository document ", 1)[1].split()[0]
        assert follow in kept, (doc_id, survivor, follow)
        assert f"{follow} (" in " ".join(minhash["lines"]) + out


@pytest.mark.slow
def test_diff_counts_equal_the_stats_difference_and_every_document_changed_fate(
        demo_sample: Path, demo_sample_variant: Path, capsys: pytest.CaptureFixture) -> None:
    code, out, _ = _run(capsys, "diff", str(demo_sample), str(demo_sample_variant),
                        "--format", "json")
    assert code == 0
    result = json.loads(out)
    assert [c["key"] for c in result["manifest_changes"]] == \
        ["stages[2].quality.code.max_line_length"]
    stats_a, stats_b = (json.loads((r / "stats.json").read_text())
                        for r in (demo_sample, demo_sample_variant))

    def by_reason(stats: dict) -> Counter:
        return Counter({r: c["docs"] for s in stats["stages"]
                        for r, c in s["removed_by_reason"].items()})

    a, b = by_reason(stats_a), by_reason(stats_b)
    expected = {r: b[r] - a[r] for r in a.keys() | b.keys() if b[r] != a[r]}
    assert {r: v["change"] for r, v in result["removed_by_reason"].items()} == expected
    assert expected.get("quality:max_line_length", 0) > 0  # the change removed more
    assert result["kept"]["change"] == stats_b["output"]["docs"] - stats_a["output"]["docs"]
    # every listed document really changed fate, read from the parquet files alone
    removed_a, removed_b = _removed(demo_sample), _removed(demo_sample_variant)
    kept_a, kept_b = _kept_ids(demo_sample), _kept_ids(demo_sample_variant)

    def fate(doc_id: str, removed: dict, kept: set[str]) -> str:
        if doc_id in removed:
            return removed[doc_id]["reason"]
        return "kept" if doc_id in kept else "replaced-or-absent"

    listed = 0
    for change in result["fate_changes"]:
        for doc_id in change["ids"]:
            listed += 1
            fa, fb = fate(doc_id, removed_a, kept_a), fate(doc_id, removed_b, kept_b)
            assert fa != fb or fa == "replaced-or-absent", (doc_id, fa, fb)
            if change["a"] not in ("replaced", "absent"):
                assert fa == change["a"]
            if change["b"] not in ("replaced", "absent"):
                assert fb == change["b"]
        assert change["examples"]
    assert listed == sum(c["docs"] for c in result["fate_changes"]) > 0
    tokens = result["kept_tokens"]["source"]
    assert sum(v["change"] for v in tokens.values()) == \
        stats_b["output"]["tokens"] - stats_a["output"]["tokens"]
    text = _run(capsys, "diff", str(demo_sample), str(demo_sample_variant))[1]
    assert "quality:max_line_length" in text and "examples of " in text
    # a run against itself: nothing changed
    same = json.loads(_run(capsys, "diff", str(demo_sample), str(demo_sample), "--format",
                           "json")[1])
    assert same["fate_changes"] == [] and same["removed_by_reason"] == {}


@pytest.mark.slow
def test_diff_refuses_runs_of_another_input(
        demo_sample: Path, ray_session: Any, tmp_path: Path,
        capsys: pytest.CaptureFixture) -> None:
    from lemur_data.pipeline.build import build
    from tests.conftest import demo_manifest

    other = tmp_path / "other-sample"
    build(demo_manifest(sample=20), str(other), workers=2, progress="none")
    code, _, err = _run(capsys, "diff", str(demo_sample), str(other))
    assert code == 2
    assert "did not read the same input" in err and "sample" in err


class _Examples(HTMLParser):
    """The report's examples: {reason: [(document id, text of its <pre>)]}."""

    def __init__(self) -> None:
        super().__init__()
        self.found: dict[str, list[list[str]]] = {}
        self.reason: str | None = None
        self.in_pre = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "details" and attributes.get("class") == "examples":
            self.reason = attributes["data-reason"]
            self.found[self.reason or ""] = []
        elif tag == "div" and attributes.get("class") == "example" and self.reason:
            self.found[self.reason].append([attributes["data-id"] or "", ""])
        elif tag == "pre" and self.reason:
            self.in_pre = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "pre":
            self.in_pre = False
        elif tag == "details":
            self.reason = None

    def handle_data(self, data: str) -> None:
        if self.in_pre and self.reason and self.found[self.reason]:
            self.found[self.reason][-1][1] += data


@pytest.mark.slow
def test_the_report_shows_examples_of_every_reason(demo_sample: Path) -> None:
    stats = json.loads((demo_sample / "stats.json").read_text())
    reasons = {reason: counts["docs"] for stage in stats["stages"]
               for reason, counts in stage["removed_by_reason"].items()}
    parser = _Examples()
    page = (demo_sample / "report.html").read_text()
    parser.feed(page)
    assert set(parser.found) == set(reasons)
    removed = _removed(demo_sample)
    for reason, items in parser.found.items():
        assert len(items) == min(3, reasons[reason])
        for doc_id, text in items:
            doc = removed[doc_id]
            assert doc["reason"] == reason
            first = doc["text"].splitlines()[:8]
            shown = text.splitlines()
            assert len(shown) <= 8
            # the lines as the document has them, cut, with personal data redacted
            assert all(a == b or "<" in a or a.endswith("…") for a, b in
                       zip(shown, first, strict=False)), (doc_id, shown[:2], first[:2])
    texts = [text for items in parser.found.values() for _, text in items]
    if any("<" in text or "&" in text for text in texts):  # parsed back from &lt; / &amp;
        assert "&lt;" in page or "&amp;" in page


def test_inspect_piped_into_a_reader_that_stops_ends_quietly(demo_sample: Path) -> None:
    """`lemur-data inspect ... | head -1`: the reader closes the pipe after one line; the
    command stops with the shell's SIGPIPE status, and no traceback.

    The pipe holds one page (F_SETPIPE_SZ) and the line is read a byte at a time, as
    `head` reads no further than it needs: -n 100 prints ~69 KB, so the command is
    surely still writing when the pipe closes. With a 64 KB pipe and a buffered
    readline (8 KB), whether it was depended on timing: it once exited 0 under load."""
    import fcntl
    import subprocess
    import sys

    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)
    process = subprocess.Popen([sys.executable, "-m", "lemur_data.pipeline.cli", "inspect",
                                "--run-dir", str(demo_sample), "-n", "100"],
                               stdout=write_end, stderr=subprocess.PIPE)
    os.close(write_end)
    assert process.stderr is not None
    first = b""
    while not first.endswith(b"\n") and (byte := os.read(read_end, 1)):
        first += byte
    os.close(read_end)  # as `head -1` does once it has its line
    error = process.stderr.read().decode()
    assert process.wait(timeout=120) == 141, error
    assert first.strip() and "Traceback" not in error and "BrokenPipe" not in error, error
