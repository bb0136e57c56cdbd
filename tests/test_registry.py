"""The lazy stage registry: names resolve to their classes, listing imports nothing."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lemur_data.stages.base import DocumentStage, GlobalStage
from lemur_data.stages.hooks import StageHooks
from lemur_data.stages.registry import STAGE_INFO, STAGES, is_global, stage_class, stage_hooks


def test_every_name_resolves_to_the_stage_of_that_name() -> None:
    listed = [name for name, info in STAGE_INFO.items() if info.listed]
    assert list(STAGES) == listed and len(STAGES) == len(listed)
    for name in STAGES:
        assert name in STAGES
        cls = STAGES[name]
        assert cls.name == name and issubclass(cls, (DocumentStage, GlobalStage))
        assert stage_class(name) is cls


def test_every_stage_declares_its_card_line_and_rate() -> None:
    """Implicit stages (ingest, tokenize, mix) resolve too, to a class with its hooks."""
    for name in STAGE_INFO:
        cls = stage_hooks(name)
        assert cls.name == name and issubclass(cls, StageHooks)
        assert cls.about and all(rate > 0 for rate in cls.rate_mb_s), name
        assert is_global(name) == issubclass(cls, GlobalStage)
    assert is_global("minhash") and not is_global("syntax") and not is_global("ingest")


def test_unknown_stage_names_the_known_ones() -> None:
    assert "nope" not in STAGES
    with pytest.raises(KeyError, match="known stages: decontaminate, exact_dedup"):
        stage_class("nope")


def test_parsing_a_manifest_imports_no_stage_module_it_does_not_name() -> None:
    code = ("import pathlib, sys; from lemur_data.pipeline.manifest import parse_manifest; "
            "parse_manifest({'name': 'x', 'sources': [{'name': 's', 'kind': 'code', "
            "'reader': {'type': 'tree', 'root': '.'}}], 'stages': [{'pii': {}}]}, "
            "base_dir=pathlib.Path('.')); "
            "print(sorted(m for m in sys.modules if m.startswith('lemur_data.stages.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "lemur_data.stages.pii" in out
    for other in ("minhash", "quality", "syntax", "langid", "decontaminate", "exact_dedup"):
        assert f"lemur_data.stages.{other}'" not in out
