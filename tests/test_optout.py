"""The optout stage on a list in the form BigCode publishes (opt-out-v2's optouts.jsonl)."""

from __future__ import annotations

import gzip
import hashlib
import importlib
import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lemur_data.filters.optout import OptOutListError, parse, verdict
from lemur_data.stages.base import ShardContext
from lemur_data.stages.optout import OptOut, OptOutError, OptOutParams
from lemur_data.stages.storage import documents_table
from tests.runs import removed_reasons, run_build

# Real packages of this installation, each standing for one GitHub repository.
PACKAGES = {"pydantic": "pydantic/pydantic", "yaml": "yaml/pyyaml", "rich": "Textualize/rich",
            "fsspec": "fsspec/filesystem_spec", "click": "pallets/click"}


def stack_like(path: Path) -> Counter[str]:
    """A parquet with The Stack dedup's columns: each package's .py files under its
    repository's name. Returns the files per repository."""
    rows: dict[str, list] = {"content": [], "max_stars_repo_path": [], "max_stars_repo_name": []}
    for package, repo in PACKAGES.items():
        folder = Path(importlib.import_module(package).__file__ or "").parent
        for file in sorted(folder.rglob("*.py"))[:12]:
            rows["content"].append(file.read_text(errors="replace"))
            rows["max_stars_repo_path"].append(str(file.relative_to(folder.parent)))
            rows["max_stars_repo_name"].append(repo)
    pq.write_table(pa.table(rows), path)
    return Counter(rows["max_stars_repo_name"])


def optouts_jsonl(path: Path) -> bytes:
    """Requests as opt-out-v2 records them: an owner's `all` (`optout_owners`) and single
    repositories, names in another case than the dataset's, one request for a repository
    that is not in the data."""
    records = [
        {"issue": 1, "author": "textualize", "optout_repos": [], "optout_owners": ["TEXTUALIZE"]},
        {"issue": 2, "author": "someone", "optout_repos": ["Pallets/Click", "pallets/flask"],
         "optout_owners": []},
        {"issue": 3, "author": "other", "optout_repos": [], "optout_owners": ["nobody-here"]},
    ]
    data = "".join(json.dumps(r) + "\n" for r in records).encode()
    path.write_bytes(data)
    return data


def test_list_forms_and_matching() -> None:
    listed = parse('{"issue": 1, "author": "a", "optout_repos": ["A/B"], '
                   '"optout_owners": ["C"]}\n# a comment\n- d\ne/f\n', "list")
    assert listed.repositories == {"a/b", "e/f"} and listed.owners == {"c", "d"}
    assert verdict("a/B", listed) == "repository" and verdict("c/x", listed) == "owner"
    assert verdict("a/c", listed) is None and verdict(None, listed) is None
    with pytest.raises(OptOutListError, match="list line 2: 'optout_repos' must be a list"):
        parse('{"optout_repos": []}\n{"optout_repos": "a/b"}\n', "list")
    with pytest.raises(OptOutListError, match="line 1: expected `owner` or `owner/name`"):
        parse("a/b/c\n", "list")


def test_pinned_sha256_refuses_another_list(tmp_path: Path) -> None:
    data = optouts_jsonl(tmp_path / "optouts.jsonl")
    gz = tmp_path / "optouts.jsonl.gz"
    gz.write_bytes(gzip.compress(data, mtime=0))
    stage = OptOut(OptOutParams(file=str(gz), sha256=hashlib.sha256(gz.read_bytes()).hexdigest()))
    stage.setup()  # gzip is read as the same list
    assert stage.optout.owners == {"textualize", "nobody-here"}
    docs = documents_table([{"id": "1", "text": "x", "source": "s", "kind": "code",
                             "repo": "pallets/click"}])
    assert stage.apply(docs, ShardContext("0", "", 0)).reasons.to_pylist() == ["repository"]
    wrong = OptOut(OptOutParams(file=str(gz), sha256="0" * 64))
    with pytest.raises(OptOutError, match="the list changed"):
        wrong.setup()
    with pytest.raises(OptOutError, match="cannot read list"):
        OptOut(OptOutParams(file=str(tmp_path / "missing.jsonl"))).setup()


@pytest.mark.slow
def test_optout_removes_listed_repositories_and_owners_in_a_build(tmp_path: Path) -> None:
    per_repo = stack_like(tmp_path / "stack.parquet")
    data = optouts_jsonl(tmp_path / "optouts.jsonl")
    raw = {"name": "optout", "sources": [{
        "name": "stack", "kind": "code", "lang": "Python",
        "reader": {"type": "parquet", "paths": ["stack.parquet"]},
        "columns": {"text": "content", "path": "max_stars_repo_path",
                    "repo": "max_stars_repo_name"}}],
        "stages": [{"optout": {"file": "optouts.jsonl"}}, {"exact_dedup": {}}]}
    run = tmp_path / "run"
    run_build(raw, tmp_path, run, workers=2)
    stats = json.loads((run / "stats.json").read_text())
    stage = next(s for s in stats["stages"] if s["name"] == "optout")
    expected = {"optout:owner": per_repo["Textualize/rich"],
                "optout:repository": per_repo["pallets/click"]}
    assert {r: c["docs"] for r, c in stage["removed_by_reason"].items()} == expected
    ingest = stats["stages"][0]
    assert ingest["in"]["docs"] == sum(per_repo.values()) == 60
    assert stage["in"]["docs"] == ingest["kept"]["docs"]
    assert stage["kept"]["docs"] + stage["removed"]["docs"] == stage["in"]["docs"]
    assert stage["removed"]["docs"] == sum(expected.values()) > 0
    reasons = Counter(r for r in removed_reasons(run) if r.startswith("optout:"))
    assert reasons == expected
    kept = pa.concat_tables(pq.read_table(p, columns=["repo"]) for p in
                            sorted((run / stats["output"]["dir"]).glob("*.parquet")))
    assert kept.num_rows == stats["output"]["docs"] > 0
    assert not {"Textualize/rich", "pallets/click"} & set(kept.column("repo").to_pylist())
    sha = hashlib.sha256(data).hexdigest()
    assert stage["list"] == {"name": "optouts.jsonl", "sha256": sha, "repositories": 2,
                             "owners": 2}
    card = (run / "README.md").read_text()
    assert sha in card and "optouts.jsonl" in card and str(tmp_path) not in card
    assert "| optout:owner |" in card.replace(" ", " ")


def test_optout_after_dedup_is_a_manifest_error(tmp_path: Path) -> None:
    from lemur_data.pipeline.manifest import ManifestError, parse_manifest

    raw = {"name": "m", "sources": [{"name": "s", "kind": "code",
                                     "reader": {"type": "tree", "root": "."}}],
           "stages": [{"minhash": {}}, {"optout": {"file": "optouts.jsonl"}}]}
    with pytest.raises(ManifestError, match=r"stages\[1\]\.optout: must come before minhash "
                                            r"\(stages\[0\]\)"):
        parse_manifest(raw, "m", tmp_path)
    raw["stages"].reverse()
    parse_manifest(raw, "m", tmp_path)
