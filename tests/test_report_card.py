"""report.html, plots/ and the dataset card of real builds: they show the run's numbers."""

from __future__ import annotations

import base64
import json
import re
import shutil
import string
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import yaml
from huggingface_hub import DatasetCard, DatasetCardData

from lemur_data.pipeline.cli import main
from lemur_data.pipeline.manifest import parse_manifest
from lemur_data.pipeline.profile import profile_output
from lemur_data.pipeline.publish import plots
from lemur_data.pipeline.publish.card import size_category
from lemur_data.pipeline.publish.report import stage_rows
from lemur_data.pipeline.publish.svg import text_width
from lemur_data.stages.hooks import human
from tests.fixtures import python_include
from tests.realdata import STDLIB
from tests.runs import run_build

SVG = "{http://www.w3.org/2000/svg}"


def svg_texts(svg: bytes) -> list[ET.Element]:
    """The <text> elements of a figure, which must parse as an SVG document."""
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return list(root.iter(f"{SVG}text"))


def dejavu_width(text: str, size: float) -> float:
    """The width of `text` in DejaVu Sans (matplotlib's copy of the font, as Agg measures
    it), in px at font size `size`."""
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.font_manager import FontProperties

    font = FontProperties(family="DejaVu Sans", size=size)
    return RendererAgg(1, 1, 72).get_text_width_height_descent(text, font, ismath=False)[0]


class Tables(HTMLParser):
    """Every <table id=...> as rows of cell text; every <img src>; every external reference."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.images: list[str] = []
        self.external: list[str] = []
        self._table: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self._table = a.get("id") or f"anonymous-{len(self.tables)}"
            self.tables[self._table] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "img":
            self.images.append(a.get("src") or "")
        for key in ("src", "href"):
            if (a.get(key) or "").startswith(("http:", "https:", "//")) or tag in ("link",
                                                                                 "script"):
                self.external.append(f"{tag} {a}")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._table:
            self.tables[self._table][-1].append("".join(self._cell))
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def value(cell: str) -> Any:
    """A table cell back to the number it shows (1,234 -> 1234)."""
    text = cell.replace(",", "")
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if re.fullmatch(r"-?[\d.]+(e-?\d+)?", text):
        return float(text)
    return cell


def parse_html(path: Path) -> Tables:
    parser = Tables()
    parser.feed(path.read_text())
    return parser


def body_rows(table: list[list[str]]) -> list[list[Any]]:
    return [[value(c) for c in row] for row in table[1:]]


def tree_with_copies(base: Path) -> Path:
    """Real code: stdlib json and email, plus a vendored copy of json (exact duplicates)."""
    root = base / "tree"
    for package in ("json", "email"):
        shutil.copytree(STDLIB / package, root / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(STDLIB / "json", root / "vendored" / "json",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.fixture(scope="module")
def mixed_run(ray_session, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Code (stdlib tree) + text (help() topics), dedup, tokenize, 10:1 mix, Megatron."""
    base = tmp_path_factory.mktemp("report")
    raw = {"name": "report-test", "seed": 9, "shard": {"max_docs": 40},
           "sources": [{"name": "stdlib", "kind": "code",
                        "reader": {"type": "tree", "root": str(tree_with_copies(base)),
                                   "repo_depth": 1, "license": "PSF-2.0"}},
                       {"name": "topics", "kind": "text", "lang": "en",
                        "reader": {"type": "python_object",
                                   "object": "pydoc_data.topics:topics"}}],
           # scoped to the code: the card says which documents the stage applied to
           "stages": [{"exact_dedup": {"partitions": 2, "sources": ["stdlib"]}}],
           "mixture": {"total_tokens": 300000, "weights": {"code": 10, "text": 1}},
           "output": {"megatron": {"max_shard_bytes": "200KB"}}}
    run = base / "run"
    run_build(raw, base, run)
    return run


def test_stats_add_up_and_match_the_shards(mixed_run: Path) -> None:
    stats = json.loads((mixed_run / "stats.json").read_text())
    previous = None
    for stage in stats["stages"]:
        for unit in ("docs", "bytes"):
            assert stage["in"][unit] == stage["kept"][unit] + stage["removed"][unit]
            assert stage["removed"][unit] == sum(c[unit] for c in
                                                 stage["removed_by_reason"].values())
            assert stage["in"][unit] == sum(c["in"][unit] for c in stage["by_source"].values())
            assert stage["kept"][unit] == sum(c["kept"][unit] for c in stage["by_lang"].values())
        if previous:
            assert stage["in"] == previous["kept"]
        previous = stage
    assert [s["name"] for s in stats["stages"]] == ["ingest", "exact_dedup", "tokenize"]
    dedup = stats["stages"][1]
    assert dedup["removed_by_reason"]["exact_dedup:duplicate"]["docs"] >= 5  # vendored json
    shards = [mixed_run / stats["output"]["dir"] / n for n in stats["output"]["shards"]]
    table = pq.read_table(shards, columns=["text", "tokens", "kind"]) if len(shards) > 1 \
        else pq.read_table(shards[0], columns=["text", "tokens", "kind"])
    assert table.num_rows == stats["output"]["docs"]
    assert pc.sum(pc.binary_length(table.column("text"))).as_py() == stats["output"]["bytes"]
    profile = stats["profile"]
    assert profile["tokens"] == stats["output"]["tokens"] == pc.sum(table.column("tokens")).as_py()
    assert sum(profile["tokens_by_kind"].values()) == profile["tokens"]
    assert sum(profile["by_license"].values()) == stats["output"]["docs"]
    assert profile["by_license"]["unknown"] == stats["output"]["by_source"]["topics"]["docs"]
    for kind, counts in profile["length_histogram"]["counts"].items():
        assert sum(counts) == sum(1 for k in table.column("kind").to_pylist() if k == kind)
    # The tasks' own figures, merged, equal the figures read back from the shards.
    assert profile == profile_output([str(s) for s in shards])
    mix = stats["mixture"]
    assert mix["used_tokens"] == 300000 == stats["megatron"]["tokens"]
    assert sum(s["tokens"] for s in stats["megatron"]["shards"]) == mix["used_tokens"]
    available = {c["key"]: c["available_tokens"] for c in mix["components"]}
    assert available == profile["tokens_by_kind"]


def test_report_tables_and_figures_show_the_run(mixed_run: Path) -> None:
    stats = json.loads((mixed_run / "stats.json").read_text())
    page = parse_html(mixed_run / "report.html")
    assert page.external == []  # self-contained
    assert body_rows(page.tables["stages"]) == stage_rows(stats)
    overview = dict(body_rows(page.tables["overview"]))
    assert overview["input documents"] == stats["input"]["docs"]
    assert overview["output documents"] == stats["output"]["docs"]
    assert overview["output bytes"] == stats["output"]["bytes"]
    assert overview["output tokens"] == stats["output"]["tokens"]
    mixture = {row[0]: row for row in body_rows(page.tables["mixture"])}
    for component in stats["mixture"]["components"]:
        row = mixture[component["key"]]
        assert row[4:7] == [component["available_tokens"], component["target_tokens"],
                            component["used_tokens"]]
    assert body_rows(page.tables["reasons-exact_dedup"]) == [
        [r, c["docs"], c["bytes"]]
        for r, c in stats["stages"][1]["removed_by_reason"].items()]
    assert dict(body_rows(page.tables["output-by-license"])) == stats["profile"]["by_license"]
    # the figures: SVG documents, inlined, the same bytes as plots/*.svg
    files = {p.stem: p.read_bytes() for p in (mixed_run / "plots").glob("*.svg")}
    assert set(files) == {"waterfall", "mixture", "tokens_by_language", "lengths"}
    assert all(src.startswith("data:image/svg+xml;base64,") for src in page.images)
    inlined = [base64.b64decode(src.split(",", 1)[1]) for src in page.images]
    assert sorted(inlined) == sorted(files.values())
    for svg in inlined:
        root = ET.fromstring(svg)
        assert root.get("width") == "1000" and float(root.get("height") or 0) >= 300
        assert root.get("viewBox") == f"0 0 1000 {root.get('height')}"
    # and they show the run's numbers, as text
    texts = {name: ["".join(t.itertext()) for t in svg_texts(svg)] for name, svg in files.items()}
    assert human(stats["input"]["docs"]) in texts["waterfall"]
    assert human(stats["output"]["docs"]) in texts["waterfall"]
    assert {"input", "output", *[s["name"] for s in stats["stages"]]} <= set(texts["waterfall"])
    assert "exact_dedup:duplicate" in texts["waterfall"]  # the legend
    assert [c["key"] for c in stats["mixture"]["components"]] == [
        t for t in texts["mixture"] if t in ("code", "text")]
    for lang, tokens in stats["profile"]["tokens_by_lang"].items():
        assert lang in texts["tokens_by_language"] and human(tokens) in texts["tokens_by_language"]
    assert "document length (bytes)" in texts["lengths"]


def test_figures_text_fits_dejavu_sans() -> None:
    """The margins and the legend columns are sized by `text_width`: an upper bound of
    every printable character's width in DejaVu Sans (the widest common sans-serif font
    but Verdana), and of real labels."""
    for c in string.printable[:95]:
        assert text_width(c, 100) >= dejavu_width(c, 100) - 0.5, c
    for label in ("quality:gopher_quality/gopher_below_alpha_threshold", "exact_dedup",
                  "Jupyter Notebook", "WWW MMM %%% @@@", "mixture: python-stdlib"):
        width = dejavu_width(label, 11)
        assert width <= text_width(label, 11) <= 1.3 * width, label
    assert text_width("Ω", 10) == 10  # outside ASCII: a whole em


def test_card_loads_validates_and_reproduces_the_manifest(mixed_run: Path) -> None:
    stats = json.loads((mixed_run / "stats.json").read_text())
    card = DatasetCard.load(mixed_run / "README.md")
    meta = card.data.to_dict()
    assert meta["license"] == "other"  # PSF-2.0 has no Hub id; the topics carry none
    assert meta["language"] == ["code", "en"]
    assert meta["task_categories"] == ["text-generation"]
    assert meta["size_categories"] == [size_category(stats["output"]["docs"])] == ["n<1K"]
    assert meta["pretty_name"] == "lemur-data report-test"
    assert {"lemur-data", "megatron-lm"} <= set(meta["tags"])
    assert meta["configs"][0]["data_files"][0]["path"] == "data/*.parquet"
    # round trip through the card API
    assert DatasetCardData(**meta).to_dict() == meta
    again = DatasetCard(str(card))
    assert again.data.to_dict() == meta and again.text == card.text
    text = card.text
    for stage in stats["stages"]:
        assert f". {stage['name']}\n" in text
    assert "`partitions=2`" in text
    dedup = next(s for s in stats["stages"] if s["name"] == "exact_dedup")
    in_scope = dedup["by_source"]["stdlib"]["in"]["docs"]
    assert 0 < in_scope < dedup["in"]["docs"]
    assert (f"It applied to the {in_scope:,} of them from `stdlib`; the others passed "
            "through untouched.") in text
    assert text.count("It applied to") == 1  # unscoped stages apply to all
    assert "Files under `{manifest_dir}`" not in text  # its paths are absolute
    # the tree's code has no stated language: the card names the detector and its version
    assert stats["code_language_detector"].startswith("go-enry (enry-python ")
    assert (f"Code language where a source states none: {stats['code_language_detector']}"
            in text)
    # the stats table of the card holds the run's numbers
    section = text.split("## Statistics", 1)[1]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    first = [[value(c.strip()) for c in row.strip("|").split(" | ")] for row in rows[1:4]]
    assert [r[:7] for r in first] == [r[:7] for r in stage_rows(stats)]
    for name in ("waterfall", "mixture", "lengths"):
        assert f"![{name}](plots/{name}.svg)" in text
    # the embedded manifest rebuilds the same run: same fingerprint
    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    manifest = parse_manifest(yaml.safe_load(block))
    assert manifest.fingerprint() == stats["fingerprint"]


def test_card_command_rewrites_the_same_bytes(mixed_run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(mixed_run, copy)
    before = {p: (copy / p).read_bytes() for p in ("README.md", "report.html",
                                                  "plots/waterfall.svg")}
    for p in before:
        (copy / p).unlink()
    # the PNG an earlier lemur-data drew: replaced, so the card does not list it twice
    (copy / "plots" / "lengths.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    assert main(["card", "--run-dir", str(copy)]) == 0
    assert {p: (copy / p).read_bytes() for p in before} == before
    assert not list((copy / "plots").glob("*.png"))
    assert main(["card", "--run-dir", str(tmp_path / "nothing")]) == 2


def test_dedup_and_syntax_stages_get_their_sections(ray_session, tmp_path: Path) -> None:
    """Near duplicates (real files with a patched line) and real C headers with macros."""
    root = tmp_path / "tree"
    shutil.copytree(STDLIB / "json", root / "json", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(python_include() / "cpython", root / "cpython")
    patched = 0
    for path in sorted((STDLIB / "json").glob("*.py")):
        text = path.read_text()
        if len(text) > 2000:
            (root / "fork").mkdir(exist_ok=True)
            (root / "fork" / path.name).write_text("# vendored, patched\n" + text)
            patched += 1
    raw = {"name": "dedup-test", "seed": 4, "shard": {"max_docs": 40},
           "sources": [{"name": "tree", "kind": "code",
                        "reader": {"type": "tree", "root": str(root), "repo_depth": 1}}],
           "stages": [{"syntax": {}}, {"minhash": {}}]}
    run = tmp_path / "run"
    run_build(raw, tmp_path, run)
    stats = json.loads((run / "stats.json").read_text())
    minhash = next(s for s in stats["stages"] if s["name"] == "minhash")
    assert minhash["cluster_sizes"] == {"2": patched} and patched >= 3
    page = parse_html(run / "report.html")
    summary = dict(body_rows(page.tables["summary-minhash"]))
    assert summary["lsh.bands"] == minhash["lsh"]["bands"]
    assert summary["lsh.rows"] == minhash["lsh"]["rows"]
    assert summary["cluster_sizes.2"] == patched
    assert summary["near_duplicates_removed"] == minhash["removed"]["docs"] == patched
    assert {p.stem for p in (run / "plots").glob("*.svg")} == {
        "waterfall", "lengths", "cluster_sizes", "syntax_errors"}
    assert len(page.images) == 4
    sizes = ["".join(t.itertext()) for t in
             svg_texts((run / "plots" / "cluster_sizes.svg").read_bytes())]
    assert "2" in sizes and str(patched) in sizes  # the bin, and its bar's count
    checked = stats["profile"]["syntax"]
    assert checked["C"]["checked"] == stats["output"]["by_lang"]["C"]["docs"]
    shards = [str(run / stats["output"]["dir"] / n) for n in stats["output"]["shards"]]
    assert len(shards) > 1 and profile_output(shards) == stats["profile"]
    card = DatasetCard.load(run / "README.md")
    assert "deduplicated" in card.data.to_dict()["tags"]
    assert "| lsh.bands | " in card.text and "### 3. minhash" in card.text


def test_the_waterfall_legend_fits_the_figure(mixed_run: Path) -> None:
    """Long reasons (the quality stage's, as the demo shows them) used to be cut at both
    edges of a 4-column legend: every legend entry is drawn inside the figure, in DejaVu
    Sans as in any narrower font, and no two columns overlap."""
    stats = json.loads((mixed_run / "stats.json").read_text())
    stage = stats["stages"][0]
    long = ["quality:gopher_quality/gopher_below_alpha_threshold",
            "quality:gopher_quality/gopher_above_avg_threshold",
            *(f"quality:gopher_repetition/duplicated_{n}_n_grams" for n in range(5, 10)),
            "quality:gopher_quality/gopher_too_many_hashes",
            "quality:gopher_repetition/dup_para_frac", "quality:auto_generated",
            "langid:low_language_score"]
    stage["removed_by_reason"].update({r: {"docs": 100 - i, "bytes": 10}
                                       for i, r in enumerate(long)})
    figure = plots.waterfall(stats)
    assert figure is not None
    root = ET.fromstring(figure.svg)
    width = float(root.get("width") or 0)
    legend = [t for t in svg_texts(figure.svg) if t.get("text-anchor") == "start"]
    labels = ["".join(t.itertext()) for t in legend]
    assert len(labels) == 12 and long[0] in labels
    assert any(label.endswith("other reasons") for label in labels)
    spans = {}
    for text, label in zip(legend, labels, strict=True):
        x, size = float(text.get("x") or 0), float(text.get("font-size") or 0)
        spans.setdefault(text.get("y"), []).append((x, x + dejavu_width(label, size), label))
    for row in spans.values():  # each legend row: inside the figure, left to right
        row.sort()
        assert row[0][0] >= 0 and row[-1][1] <= width, row
        assert all(a[1] < b[0] for a, b in zip(row, row[1:], strict=False)), row


def test_labels_from_the_data_stay_valid_svg() -> None:
    """A language is whatever a source's column says: markup, quotes and characters XML
    cannot hold are drawn as text, and the figure still parses."""
    hostile = "<b>Py\"thon</b> & \x01\ud800"
    stats = {"profile": {"tokens": 1500, "tokens_by_lang": {hostile: 1000, "en": 500},
                         "docs_by_kind_lang": {"code": {hostile: 3}, "text": {"en": 1}}}}
    figure = plots.tokens_by_language(stats)
    assert isinstance(figure, plots.Plot)
    texts = ["".join(t.itertext()) for t in svg_texts(figure.svg)]
    assert '<b>Py"thon</b> & \ufffd\ufffd' in texts and "en" in texts
    assert human(1000) in texts and human(500) in texts


def test_a_one_category_figure_is_a_sentence(mixed_run: Path, tmp_path: Path) -> None:
    """A mix of one component and output of one language: their bar charts would hold
    one bar each, so the report says it in a sentence and draws nothing; a figure an
    earlier card drew for them is removed, and the card no longer links it."""
    copy = tmp_path / "run"
    shutil.copytree(mixed_run, copy)
    stats = json.loads((copy / "stats.json").read_text())
    assert len(stats["mixture"]["components"]) == 2 and len(stats["profile"]["tokens_by_lang"]) > 1
    one = stats["mixture"]["components"][0]
    stats["mixture"]["components"] = [one]
    lang, tokens = max(stats["profile"]["tokens_by_lang"].items(), key=lambda kv: kv[1])
    stats["profile"]["tokens_by_lang"] = {lang: tokens}
    (copy / "stats.json").write_text(json.dumps(stats, indent=2, sort_keys=True))
    assert main(["card", "--run-dir", str(copy)]) == 0
    assert {p.stem for p in (copy / "plots").glob("*.svg")} == {"waterfall", "lengths"}
    page = (copy / "report.html").read_text()
    notes = dict(re.findall(r'<p class="figure-note" id="fig-(\w+)">(.*?)</p>', page))
    assert set(notes) == {"mixture", "tokens_by_language"}
    assert f"One mixture component, {one['key']}: " in notes["mixture"]
    assert f"tokens of the kept documents are {lang}." in notes["tokens_by_language"]
    assert len(parse_html(copy / "report.html").images) == 2
    card = (copy / "README.md").read_text()
    assert "(plots/waterfall.svg)" in card and "plots/mixture" not in card
