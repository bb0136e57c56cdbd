"""Tokenize stage: ids per document, EOS after each (BOS optional), SentencePiece or JSON."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pyarrow as pa
import pytest
import sentencepiece as spm
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from lemur_data.pipeline.manifest import ManifestError, parse_manifest
from lemur_data.stages.base import ShardContext
from lemur_data.stages.tokenize.stage import Tokenize, TokenizeParams, encode_documents
from lemur_data.stages.tokenize.tokenizer import (
    DEFAULT_PACKAGE_MODEL,
    TokenizerConfig,
    load_tokenizer,
    package_file,
)

STDLIB = Path(sysconfig.get_paths()["stdlib"])
CTX = ShardContext("s", "/nonexistent", 0)


def _stdlib_texts(package: str, limit: int = 40) -> list[str]:
    files = sorted((STDLIB / package).rglob("*.py"))[:limit]
    return [f.read_text(encoding="utf-8") for f in files]


def _docs(texts: list[str]) -> pa.Table:
    return pa.table({"id": [str(i) for i in range(len(texts))], "text": texts,
                     "source": ["s"] * len(texts), "kind": ["code"] * len(texts),
                     "lang": ["Python"] * len(texts)})


def test_default_is_a_32k_llama_style_sentencepiece_model() -> None:
    tokenizer = load_tokenizer(TokenizerConfig())
    assert tokenizer.kind == "sentencepiece"
    assert (tokenizer.vocab_size, tokenizer.bos_id, tokenizer.eos_id) == (32000, 1, 2)
    assert tokenizer.uint16
    assert tokenizer.decode(tokenizer.encode_batch(["def f(x):\n    return x"])[0]) \
        == "def f(x):\n    return x"


def test_stage_appends_eos_and_counts_tokens_on_real_files() -> None:
    texts = _stdlib_texts("email") + [""]  # an empty document still ends with EOS
    stage = Tokenize(TokenizeParams())
    stage.setup()
    result = stage.apply(_docs(texts), CTX)
    assert result.reasons.null_count == len(texts)
    table = result.table
    assert table.schema.field("token_ids").type == pa.list_(pa.uint16())
    reference = spm.SentencePieceProcessor(model_file=package_file(DEFAULT_PACKAGE_MODEL))
    for text, ids, count in zip(texts, table.column("token_ids").to_pylist(),
                                table.column("tokens").to_pylist(), strict=True):
        assert ids == reference.encode(text) + [2]
        assert count == len(ids)
    assert table.column("token_ids").to_pylist()[-1] == [2]


@pytest.mark.parametrize(("bos", "eos"), [(True, True), (True, False), (False, False)])
def test_bos_and_eos_are_configurable(bos: bool, eos: bool) -> None:
    texts = _stdlib_texts("json")
    config = TokenizerConfig(bos=bos, eos=eos)
    tokenizer = load_tokenizer(config)
    # batch_docs smaller than the input: the batches must join seamlessly
    ids = encode_documents(tokenizer, texts, config, batch_docs=2).to_pylist()
    plain = tokenizer.encode_batch(texts)
    for got, want in zip(ids, plain, strict=True):
        assert got == [1] * bos + want + [2] * eos


def _train_tokenizer_json(folder: Path, vocab: int, word_level: bool) -> Path:
    """A real tokenizer.json, trained by `tokenizers` on standard-library source."""
    texts = _stdlib_texts("email", 200) + _stdlib_texts("http", 200) + _stdlib_texts("json")
    if word_level:
        words = sorted({w for t in texts for w in t.split()})
        table = {"[UNK]": 0, "</s>": 1, **{w: i + 2 for i, w in enumerate(words)}}
        # pad the table past the uint16 limit with real words' variants
        extra = [f"{w}{n}" for n in range(8) for w in words]
        for word in extra[: max(0, vocab - len(table))]:
            table[word] = len(table)
        model = Tokenizer(models.WordLevel(table, unk_token="[UNK]"))
        model.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    else:
        model = Tokenizer(models.BPE(unk_token="[UNK]"))
        model.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        model.train_from_iterator(texts, trainers.BpeTrainer(
            vocab_size=vocab, special_tokens=["[UNK]", "<s>", "</s>"], show_progress=False))
    path = folder / "tokenizer.json"
    model.save(str(path))
    return path


def test_tokenizer_json_file(tmp_path: Path) -> None:
    path = _train_tokenizer_json(tmp_path, 2000, word_level=False)
    config = TokenizerConfig(file=str(path))
    tokenizer = load_tokenizer(config)
    assert tokenizer.kind == "tokenizers" and tokenizer.eos_id == 2 and tokenizer.bos_id == 1
    texts = _stdlib_texts("urllib")
    reference = Tokenizer.from_file(str(path))
    got = encode_documents(tokenizer, texts, config)
    assert got.type == pa.list_(pa.uint16())
    for ids, text in zip(got.to_pylist(), texts, strict=True):
        assert ids == reference.encode(text, add_special_tokens=False).ids + [2]


def test_large_vocabulary_gets_int32_ids(tmp_path: Path) -> None:
    path = _train_tokenizer_json(tmp_path, 70000, word_level=True)
    config = TokenizerConfig(file=str(path), eos_id=1)
    stage = Tokenize(TokenizeParams(tokenizer=config))
    stage.setup()
    assert stage.tokenizer is not None and stage.tokenizer.vocab_size >= 65500
    texts = _stdlib_texts("email", 5)
    table = stage.apply(_docs(texts), CTX).table
    assert table.schema.field("token_ids").type == pa.list_(pa.int32())
    ids = table.column("token_ids").to_pylist()
    assert all(row[-1] == 1 for row in ids)
    assert max(max(row) for row in ids) > 0
    assert stage.added_columns()[0].type == pa.list_(pa.int32())


def test_tokenizer_without_eos_is_refused(tmp_path: Path) -> None:
    model = Tokenizer(models.WordLevel({"[UNK]": 0, "a": 1}, unk_token="[UNK]"))
    path = tmp_path / "tokenizer.json"
    model.save(str(path))
    with pytest.raises(ValueError, match="no EOS"):
        load_tokenizer(TokenizerConfig(file=str(path)))


def test_manifest_tokenizer_keys(tmp_path: Path) -> None:
    base = {"name": "t", "sources": [{"name": "s", "kind": "code",
                                      "reader": {"type": "tree", "root": str(STDLIB / "json")}}]}
    # the manifest checks that the file exists: a real model, copied beside it
    (tmp_path / "tok.model").write_bytes(Path(package_file(DEFAULT_PACKAGE_MODEL)).read_bytes())
    manifest = parse_manifest({**base, "tokenizer": {"sentencepiece": "tok.model"}},
                              base_dir=tmp_path)
    assert manifest.tokenizer is not None
    assert manifest.tokenizer.sentencepiece == str(tmp_path / "tok.model")
    with pytest.raises(ManifestError, match="give one of"):
        parse_manifest({**base, "tokenizer": {"hf": "x/y", "file": "t.json"}}, base_dir=tmp_path)
    with pytest.raises(ManifestError, match="tokenizer.vocab: unknown key"):
        parse_manifest({**base, "tokenizer": {"vocab": 3}}, base_dir=tmp_path)


def test_package_file_errors_name_the_problem() -> None:
    with pytest.raises(ModuleNotFoundError, match="not installed"):
        package_file("no_such_package_xyz:data/t.model")
    with pytest.raises(FileNotFoundError, match="no file"):
        package_file("mistral_common:data/missing.model")


def test_earlier_rounds_ids_are_reused_only_for_the_same_id_and_text(tmp_path: Path) -> None:
    """`read: needed`'s last round takes the ids of earlier rounds' files (newest first)
    for documents of the same id and text; edited texts (as PII redaction edits them),
    new documents and rows no earlier file holds are encoded. The shard written is
    byte-identical to encoding everything."""
    import pyarrow.parquet as pq

    from lemur_data.stages.tokenize.stage import earlier_ids

    texts = (_stdlib_texts("email", 60) + _stdlib_texts("asyncio", 60))[:60]
    assert len(texts) == 60
    stage = Tokenize(TokenizeParams())
    stage.setup()
    full = stage.apply(_docs(texts), CTX).table
    # the pilot tokenized the first 40 documents; a later round 20-49, two of them edited
    pilot, later = full.slice(0, 40), full.slice(20, 30)
    edited = later.column("text").to_pylist()
    edited[3] = edited[3].replace("import", "from x import", 1)
    edited[7] = edited[7][: len(edited[7]) // 2]
    later = later.set_column(1, "text", pa.array(edited, later.schema.field("text").type))
    for name, table in (("pilot", pilot), ("later", later)):
        pq.write_table(table.select(["id", "text", "token_ids"]), tmp_path / f"{name}.parquet")
    paths = (str(tmp_path / "later.parquet"), str(tmp_path / "missing.parquet"),
             str(tmp_path / "pilot.parquet"))
    # this round: in another order, documents 50-59 never tokenized before, and 5 and 44
    # edited since
    now = list(texts)
    now[5], now[44] = now[5] + "\n# edited\n", now[44].replace("def ", "def  ", 1)
    order = [*range(59, -1, -3), *range(58, -1, -3), *range(57, -1, -3)]
    docs = _docs([now[i] for i in order]).set_column(
        0, "id", pa.array([str(i) for i in order]))
    found = earlier_ids(paths, docs.column("id").to_pylist(), docs.column("text").to_pylist())
    assert found is not None
    where = found[1]
    reused = {order[n]: at for n, at in enumerate(where) if at >= 0}
    assert set(reused) == set(range(50)) - {5, 44}
    # the later round's file is read first: its 27 matches (20-49 but 23 and 27, which
    # it holds edited, and 44, edited since) come first; 23 and 27 come from the pilot's
    assert sorted(d for d, at in reused.items() if at < 27) == sorted(
        set(range(20, 50)) - {23, 27, 44})
    assert min(reused[23], reused[27]) >= 27
    expected = stage.apply(docs, CTX).table
    got = stage.apply(docs, ShardContext("s", "/nonexistent", 0, earlier=paths)).table
    assert got.equals(expected)
    for name, table in (("expected", expected), ("got", got)):
        pq.write_table(table, tmp_path / f"{name}.parquet")
    assert (tmp_path / "got.parquet").read_bytes() == (tmp_path / "expected.parquet").read_bytes()
    # nothing earlier: encoded as always
    assert earlier_ids((str(tmp_path / "missing.parquet"),), ["0"], [texts[0]]) is None
