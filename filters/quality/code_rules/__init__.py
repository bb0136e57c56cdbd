"""Code quality rules of The Stack, StarCoder and StarCoder2, as pure functions.

Each rule is one class that owns its parameters (its fields, under the names the
manifest uses) and its check; a parameter of None (or false, for a switch) turns its
rule off. The modules, one job each:

- `base.py`: the rule contract (`CodeRule`) and the file as rules see it (`CodeDoc`);
- the rules by family: `file_kind.py` (go-enry's file classes, generator markers and
  file names), `lines.py` (size, line count, line length, alphabetic fraction),
  `formats.py` (XML header, HTML visible text, plain-text file names), `content.py`
  (encoded data, invisible characters), `extension_table.py` (StarCoder's
  per-extension CSV and its rule);
- `rule_set.py`: every rule in checking order, their parameters (`PARAMETERS`, what the
  quality stage's overrides are built from) and `CodeRules`, the rules of one language;
- `presets.py`: `the-stack`, `starcoder`, `starcoder2`, `none`, with their sources;
- `evaluate.py`: `check_one` (the reference) and `evaluate` (the same decisions for a
  batch, faster).

What the quality stage, the tests and the benchmarks use is importable from here.
"""

from .base import CodeDoc, CodeRule
from .content import EncodedData, InvisibleCharacters
from .evaluate import check_one, evaluate
from .extension_table import ExtensionTableRows, parse_extension_table
from .file_kind import AUTOGEN_MARKERS, AUTOGEN_PATHS, STARCODER2_AUTOGEN_MARKERS
from .presets import CODE_PRESETS, CodePreset
from .rule_set import (
    PARAMETERS,
    RULE_CLASSES,
    THRESHOLD_NAMES,
    CodeRules,
    parameter_doc,
    parameter_is_path,
)

__all__ = ["AUTOGEN_MARKERS", "AUTOGEN_PATHS", "CODE_PRESETS", "PARAMETERS", "RULE_CLASSES",
           "STARCODER2_AUTOGEN_MARKERS", "THRESHOLD_NAMES", "CodeDoc", "CodePreset", "CodeRule",
           "CodeRules", "EncodedData", "InvisibleCharacters", "check_one", "evaluate",
           "ExtensionTableRows", "parse_extension_table", "parameter_doc", "parameter_is_path"]
