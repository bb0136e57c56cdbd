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
