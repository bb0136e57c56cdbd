"""The benchmarks lemur-90b.yaml describes but cannot ship (Spider, MultiPL-E, DS-1000):
their `{name, file, ...}` lines, as the manifest's comments give them, work on files in
each release's own schema."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from lemur_data.stages.base import ShardContext
from lemur_data.stages.decontaminate.stage import Decontaminate, DecontaminateParams
from lemur_data.stages.storage import documents_table

MANIFEST = Path(__file__).resolve().parents[1] / "manifests" / "lemur-90b.yaml"

# One item of each, in the release's fields (Spider's dev.json is a JSON list).
SQL = ("SELECT T2.name, T2.capacity FROM concert AS T1 JOIN stadium AS T2 ON "
       "T1.stadium_id = T2.stadium_id WHERE T1.year >= 2014 GROUP BY T2.stadium_id "
       "ORDER BY count(*) DESC LIMIT 1")
ROWS = {
    "spider": [{"db_id": "concert_singer", "query": SQL, "query_toks": SQL.split(),
                "question": "Show the stadium name and capacity with most number of concerts "
                            "in year 2014 or after."}],
    "multipl-e": [{"name": "HumanEval_23_strlen", "language": "cpp",
                   "prompt": "#include<assert.h>\n#include<bits/stdc++.h>\n// Return length of "
                             "given string\n// >>> string_length((\"abc\"))\n// (3)\nlong "
                             "string_length(std::string string) {\n",
                   "tests": "}\nint main() {\n    auto candidate = string_length;\n}\n",
                   "stop_tokens": ["\n}"]}],
    "ds-1000": [{"prompt": "Problem:\nI have a pandas DataFrame and I would like to shuffle "
                           "its rows according to a list of positions, then count how many "
                           "rows changed their Type.\nA:\n<code>\nimport pandas as pd\n",
                 "reference_code": "def g(df, List):\n    df2 = df.iloc[List].reindex()."
                                   "reset_index(drop=True)\n    return (df2.Type != df.Type)"
                                   ".sum()\nresult = g(df.copy(), List)\n",
                 "metadata": {"problem_id": 1, "library": "Pandas"}, "code_context": ""}],
}
FILES = {"spider": "spider/dev.json", "multipl-e": "multipl-e/humaneval-cpp.jsonl",
         "ds-1000": "ds-1000/test.jsonl"}


def described() -> dict[str, dict]:
    """The `{name, file, ...}` entries in the manifest's comments, parsed as YAML."""
    lines = re.findall(r"^\s*#\s+- (\{name: .*\})\s*$", MANIFEST.read_text(), re.M)
    return {entry["name"]: entry for entry in map(yaml.safe_load, lines)}


def test_described_benchmarks_remove_their_items(tmp_path: Path) -> None:
    entries = described()
    assert sorted(entries) == ["ds-1000", "multipl-e", "spider"]
    benchmarks = []
    for name, entry in entries.items():
        assert entry["file"].startswith(name + "/")
        path = tmp_path / FILES[name]
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = ROWS[name]
        path.write_text(json.dumps(rows) if path.suffix == ".json"
                        else "".join(json.dumps(r) + "\n" for r in rows))
        benchmarks.append({**entry, "file": str(path)})
    stage = Decontaminate(DecontaminateParams(benchmarks=benchmarks, background=[]))
    stage.setup()
    texts = [f"-- a migration script\n{SQL};\n",
             "// utils.cpp\n" + ROWS["multipl-e"][0]["prompt"] + "  return string.size();\n}\n",
             "# notebook cell\n" + ROWS["ds-1000"][0]["reference_code"],
             "SELECT name FROM stadium;\n"]
    docs = documents_table([{"id": str(i), "text": t, "source": "s", "kind": "code"}
                            for i, t in enumerate(texts)])
    result = stage.apply(docs, ShardContext("0", "", 0))
    assert result.reasons.to_pylist() == ["spider", "multipl-e", "ds-1000", None]
