"""Manifest validation: errors name the key path and what was expected."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from lemur_data.pipeline.manifest import ManifestError, load_manifest, parse_manifest

REPO = Path(__file__).resolve().parents[1]


def base() -> dict:
    return {"name": "t", "sources": [
        {"name": "a", "kind": "code", "reader": {"type": "tree", "root": "/tmp"}},
        {"name": "b", "kind": "text", "reader": {"type": "jsonl", "paths": ["x.jsonl"]}},
        {"name": "c", "kind": "code", "reader": {"type": "parquet", "paths": ["x.parquet"]}},
    ]}


def problems(raw: dict) -> list[str]:
    with pytest.raises(ManifestError) as error:
        parse_manifest(raw, "m.yaml", Path("/tmp"))
    return error.value.problems


@pytest.mark.parametrize("manifest", ["demo.yaml", "lemur-90b.yaml"])
def test_shipped_manifests_are_valid(manifest: str) -> None:
    loaded = load_manifest(REPO / "manifests" / manifest)
    assert loaded.sources and loaded.name


def test_unknown_key_is_named_with_its_path() -> None:
    raw = base()
    raw["sources"][2]["reader"]["pahts"] = raw["sources"][2]["reader"].pop("paths")
    found = problems(raw)
    assert "sources[2].reader.pahts: unknown key" in found
    assert "sources[2].reader.paths: required key is missing" in found


def test_wrong_type_names_key_and_value() -> None:
    raw = base()
    raw["shard"] = {"max_docs": "many"}
    (problem,) = problems(raw)
    assert problem.startswith("shard.max_docs:") and "'many'" in problem


def test_missing_required_field() -> None:
    raw = base()
    del raw["sources"][0]["kind"]
    assert problems(raw) == ["sources[0].kind: required key is missing"]


def test_unknown_reader_type_lists_the_known_ones() -> None:
    raw = base()
    raw["sources"][1]["reader"]["type"] = "csv"
    (problem,) = problems(raw)
    assert problem.startswith("sources[1].reader:") and "parquet" in problem


def test_unknown_stage_and_stage_parameter() -> None:
    raw = base()
    raw["stages"] = [{"exact_dedupe": {}}, {"exact_dedup": {"partitons": 4}}]
    found = problems(raw)
    assert any(p.startswith("stages[0]: unknown stage 'exact_dedupe'") for p in found)
    assert "stages[1].exact_dedup.partitons: unknown key" in found


def test_references_are_checked() -> None:
    raw = base()
    raw["sources"].append(dict(raw["sources"][0]))
    raw["stages"] = [{"exact_dedup": {"sources": ["nope"]}}]
    raw["mixture"] = {"total_tokens": 1e6, "weights": {"code": 10, "web": 1}}
    found = problems(raw)
    assert "sources: name 'a' is used more than once" in found
    assert any(p.startswith("stages[0].exact_dedup.sources: no source named 'nope'") for p in found)
    assert any(p.startswith("mixture.weights.web:") for p in found)


def test_placeholders_and_relative_paths(tmp_path: Path) -> None:
    raw = base()
    raw["sources"][0]["reader"]["root"] = "{stdlib}"
    manifest = parse_manifest(raw, "m.yaml", tmp_path)
    assert Path(manifest.sources[0].reader.root, "os.py").exists()
    assert manifest.sources[1].reader.paths == [str(tmp_path / "x.jsonl")]
    raw["sources"][0]["reader"]["root"] = "{nowhere}"
    assert any("unknown placeholder {nowhere}" in p for p in problems(raw))


def test_langid_model_and_saved_dataset_path_are_resolved(tmp_path: Path) -> None:
    from lemur_data.filters.langid.text import FastTextLanguageID, default_model_path
    from tests.realdata import prose_paragraphs

    (tmp_path / "models").mkdir()
    shutil.copy(default_model_path(), tmp_path / "models" / "lid.ftz")
    (tmp_path / "manifest.yaml").write_text(yaml.safe_dump({
        "name": "t",
        "sources": [
            {"name": "saved", "kind": "text", "columns": {"path": "file", "text": "body"},
             "reader": {"type": "hf_dataset", "path": "saved/web", "from_disk": True}},
            {"name": "hub", "kind": "code",
             "reader": {"type": "hf_dataset", "path": "bigcode/the-stack-smol"}},
            {"name": "local", "kind": "text",
             "reader": {"type": "hf_dataset", "path": "json", "data_files": ["web.jsonl"]}},
        ],
        "stages": [{"langid": {"text": {"model": "models/lid.ftz"}}},
                   {"decontaminate": {"benchmarks": ["humaneval"]}}],
    }))
    manifest = load_manifest(tmp_path / "manifest.yaml")
    saved, hub, local = (s.reader for s in manifest.sources)
    assert saved.path == str(tmp_path / "saved" / "web")
    assert manifest.sources[0].columns == {"path": "file", "text": "body"}  # not a path key
    assert hub.path == "bigcode/the-stack-smol" and local.path == "json"  # ids, not paths
    assert local.data_files == [str(tmp_path / "web.jsonl")]
    model = manifest.stage_specs[0].params.text.model
    assert model == str(tmp_path / "models" / "lid.ftz")
    langs, _ = FastTextLanguageID(model).predict(prose_paragraphs()[:3])
    assert langs == ["en", "en", "en"]  # the relative model path loads from any cwd
    raw = {"name": "t", "sources": [], "stages": [
        {"langid": {"text": {"model": "{nowhere}/lid.bin"}}}]}
    assert any("unknown placeholder {nowhere}" in p for p in problems(raw))


def test_paths_follow_the_type_not_the_key_name() -> None:
    """A field typed LocalPath is resolved under any name and in any container; a string
    field named like a path (`model`, `file`, `root`) is left as written."""
    from pydantic import BaseModel

    from lemur_data.stages.paths import LocalPath, resolve_paths

    class Params(BaseModel):
        model: str  # a model's name, not a file
        file: str | None = None
        root: list[str] = []
        weights: LocalPath  # a path under a name no list of keys knows
        extra: list[LocalPath] = []
        by_lang: dict[str, LocalPath] = {}
        maybe: LocalPath | None = None

    seen: list[str] = []

    def expand(value: str, where: str) -> str:
        seen.append(where)
        return f"/abs/{value}"

    raw = {"model": "gpt2", "file": "notes", "root": ["r"], "weights": "w.bin",
           "extra": ["a", "b"], "by_lang": {"en": "c"}, "maybe": "d"}
    assert resolve_paths(raw, Params, "stages[0].x", expand) == {
        "model": "gpt2", "file": "notes", "root": ["r"], "weights": "/abs/w.bin",
        "extra": ["/abs/a", "/abs/b"], "by_lang": {"en": "/abs/c"}, "maybe": "/abs/d"}
    assert seen == ["stages[0].x.weights", "stages[0].x.extra[0]", "stages[0].x.extra[1]",
                    "stages[0].x.by_lang.en", "stages[0].x.maybe"]
    assert resolve_paths({"weights": 3, "maybe": None}, Params, "", expand) == {
        "weights": 3, "maybe": None}  # not strings: validation names them


def test_stage_and_top_level_path_fields_are_resolved(tmp_path: Path) -> None:
    raw = base()
    raw["sources"].append({"name": "local", "kind": "text", "reader": {
        "type": "hf_dataset", "path": "json", "data_files": "web.jsonl"}})
    raw["stages"] = [{"decontaminate": {"benchmarks": [
        "humaneval", {"name": "mine", "file": "items.jsonl", "code": ["code"]}],
        "background": ["{stdlib}/json"]}},
        {"exact_dedup": {"against": ["../earlier"]}}]
    raw["tokenizer"] = {"file": "tok/tokenizer.json"}
    (tmp_path / "tok").mkdir()
    (tmp_path / "tok" / "tokenizer.json").write_text("{}")  # validation: the file exists
    manifest = parse_manifest(raw, "m.yaml", tmp_path)
    assert manifest.sources[3].reader.data_files == str(tmp_path / "web.jsonl")
    decontaminate, dedup = (s.params for s in manifest.stage_specs)
    assert decontaminate.benchmarks[0] == "humaneval"  # a name, not a path
    assert decontaminate.benchmarks[1].file == str(tmp_path / "items.jsonl")
    assert Path(decontaminate.background[0], "decoder.py").is_file()
    assert dedup.against == [str(tmp_path / "../earlier")]
    assert manifest.tokenizer.file == str(tmp_path / "tok" / "tokenizer.json")


def test_yaml_syntax_error_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("name: x\nsources: [\n")
    with pytest.raises(ManifestError) as error:
        load_manifest(path)
    assert str(path) in str(error.value) and "YAML" in str(error.value)


def test_fingerprint_changes_with_content() -> None:
    a = parse_manifest(base(), "m", Path("/tmp"))
    raw = base()
    raw["seed"] = 7
    assert a.fingerprint() != parse_manifest(raw, "m", Path("/tmp")).fingerprint()
    assert a.fingerprint() == parse_manifest(base(), "m", Path("/tmp")).fingerprint()


def test_top_level_and_stage_parameter_errors_show_together() -> None:
    """One pass lists them all: a stage's parameter error is not held back until the
    top-level ones are fixed."""
    raw = base()
    raw["seeed"] = 1
    raw["sources"][1]["kind"] = "prose"
    raw["stages"] = [{"quality": {"max_line_lenght": 3}}, {"exact_dedup": {"partitions": -1}}]
    found = problems(raw)
    assert "seeed: unknown key" in found
    assert any(p.startswith("sources[1].kind:") for p in found)
    assert "stages[0].quality.max_line_lenght: unknown key" in found
    assert any(p.startswith("stages[1].exact_dedup.partitions:") for p in found)
