"""A dataset that needs a loading script: refused at validate and plan in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from lemur_data.stages.readers.common import SourceInfo
from lemur_data.stages.readers.hf_dataset import (
    HFDatasetParams,
    HFDatasetReader,
    LoadingScriptError,
)
from tests.test_cli import cli

# A loading script as `datasets` expects one (folder `scripted/` with `scripted.py`,
# a GeneratorBasedBuilder): the form RedPajama-Data-1T is published in.
SCRIPT = '''
import json
import os

import datasets


class Scripted(datasets.GeneratorBasedBuilder):
    BUILDER_CONFIGS = [datasets.BuilderConfig(name="arxiv")]

    def _info(self):
        return datasets.DatasetInfo(features=datasets.Features(
            {"text": datasets.Value("string"), "meta": datasets.Value("string")}))

    def _split_generators(self, dl_manager):
        path = os.path.join(os.path.dirname(__file__), "data.jsonl")
        return [datasets.SplitGenerator(name=datasets.Split.TRAIN,
                                        gen_kwargs={"path": path})]

    def _generate_examples(self, path):
        with open(path) as handle:
            for i, line in enumerate(handle):
                yield i, json.loads(line)
'''


def script_dataset(root: Path) -> Path:
    folder = root / "scripted"
    folder.mkdir()
    (folder / "scripted.py").write_text(SCRIPT)
    (folder / "data.jsonl").write_text(json.dumps({"text": "a paper", "meta": "{}"}) + "\n")
    return folder


def manifest_file(tmp_path: Path, folder: Path) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump({"name": "m", "sources": [
        {"name": "rp-arxiv", "kind": "text",
         "reader": {"type": "hf_dataset", "path": str(folder), "name": "arxiv"}}]}))
    return path


@pytest.mark.parametrize("command", ["validate", "plan"])
def test_loading_script_dataset_exits_2_with_one_line(tmp_path: Path, command: str) -> None:
    folder = script_dataset(tmp_path)
    result = cli(command, "--manifest", str(manifest_file(tmp_path, folder)),
                 "--run-dir", str(tmp_path / "run")) if command == "plan" else cli(
        command, "--manifest", str(manifest_file(tmp_path, folder)))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    problem = [line for line in result.stderr.splitlines() if "scripted.py" in line]
    assert len(problem) == 1, result.stderr
    line = problem[0]
    assert line.strip().startswith("- sources[0].reader")
    assert "refs/convert/parquet" in line and "own data files" in line


def test_datasets_own_refusal_becomes_the_same_line(tmp_path: Path) -> None:
    """A Hub dataset's script is only found when `datasets` opens it: the reader turns
    the library's refusal (here for a real local script dataset, past the manifest check)
    into the same message."""
    folder = script_dataset(tmp_path)
    params = HFDatasetParams.model_construct(type="hf_dataset", path=str(folder), name="arxiv",
                                             split="train", data_files=None, data_dir=None,
                                             revision=None, streaming=True, from_disk=False)
    reader = HFDatasetReader(params, SourceInfo("rp-arxiv", "text"))
    with pytest.raises(LoadingScriptError) as error:
        reader.plan(100, 2**20)
    message = str(error.value)
    assert "\n" not in message and "'scripted.py'" in message
    assert f"hf://datasets/{folder}@refs%2Fconvert%2Fparquet/arxiv/train/" in message
