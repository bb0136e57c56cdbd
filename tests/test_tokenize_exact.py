"""The fast encoder gives exactly the reference's ids (sentencepiece / tokenizers).

On a slice of the demo's documents and a multilingual set from real packages: every
script lid.176 knows (pycountry's translations in 156 locales) and code in every
language the syntax stage has a grammar for. The whole demo is checked by
`python -m tests.bench.bench_tokenize_exact`.
"""

from __future__ import annotations

import dataclasses
import json
import sysconfig
from pathlib import Path

import regex
import sentencepiece as spm
from tokenizers import Tokenizer

from lemur_data.stages.tokenize import convert
from lemur_data.stages.tokenize.backends import flat_encode, split
from lemur_data.stages.tokenize.stage import Tokenize, TokenizeParams
from lemur_data.stages.tokenize.tokenizer import (
    DEFAULT_PACKAGE_MODEL,
    TextTokenizer,
    TokenizerConfig,
    load_tokenizer,
    package_file,
)
from tests.realdata import STDLIB, grammar_code, prose_paragraphs, translated_catalogs

MANIFESTS = Path(__file__).resolve().parents[1] / "manifests"
# The scripts of lid.176's languages (Hiragana is rare in catalogs; Katakana stands in).
SCRIPTS = ["Latin", "Cyrillic", "Greek", "Arabic", "Hebrew", "Devanagari", "Bengali",
           "Gurmukhi", "Gujarati", "Oriya", "Tamil", "Telugu", "Kannada", "Malayalam",
           "Sinhala", "Thai", "Lao", "Tibetan", "Myanmar", "Georgian", "Armenian", "Ethiopic",
           "Khmer", "Han", "Katakana", "Hangul", "Thaana"]
SPECIAL_TEXT = "a <s> b </s> c <|endoftext|> d<s></s><unk>"


def demo_slice() -> list[str]:
    """Documents of each demo source: stdlib and purelib code, C headers, notebooks,
    help() topics, package METADATA."""
    purelib = Path(sysconfig.get_paths()["purelib"])
    include = Path(sysconfig.get_paths()["include"])
    files = (sorted((STDLIB / "asyncio").glob("*.py"))[:15] + sorted(include.glob("*.h"))[:15]
             + sorted((purelib / "yaml").glob("*.py"))[:10]
             + sorted(purelib.glob("*.dist-info/METADATA"))[:10]
             + sorted((MANIFESTS / "data" / "notebooks").glob("*.ipynb")))
    return [f.read_text(encoding="utf-8", errors="replace") for f in files] \
        + prose_paragraphs()[:40]


def multilingual() -> list[str]:
    catalogs = translated_catalogs(2000)
    text = "\n".join(catalogs.values())
    missing = [s for s in SCRIPTS if not regex.search(rf"\p{{Script={s}}}", text)]
    assert not missing and len(catalogs) >= 150, (missing, len(catalogs))
    code = grammar_code(2)
    assert all(len(v) == 2 for v in code.values()) and len(code) >= 16
    return list(catalogs.values()) + [t for texts in code.values() for t in texts]


def _fast_ids(tokenizer: TextTokenizer, texts: list[str]) -> list[list[int]]:
    assert tokenizer.fast is not None, tokenizer.note
    return split(*tokenizer.encode_flat(texts))


def test_default_model_encodes_with_fastokens_and_sentencepiece_ids() -> None:
    tokenizer = load_tokenizer(TokenizerConfig())
    assert tokenizer.engine.startswith("fastokens ") and tokenizer.note == ""
    assert tokenizer.describe()["reference"].startswith("sentencepiece ")
    texts = demo_slice() + multilingual()
    reference = spm.SentencePieceProcessor(model_file=package_file(DEFAULT_PACKAGE_MODEL))
    want = reference.encode(texts, out_type=int)
    got = _fast_ids(tokenizer, texts)
    bad = [i for i, (a, b) in enumerate(zip(got, want, strict=True)) if a != b]
    assert not bad, [texts[i][:60] for i in bad[:5]]
    assert sum(map(len, want)) > 300_000


def test_tokenizer_json_encodes_with_fastokens_and_its_own_ids(tmp_path: Path) -> None:
    """A tokenizer.json (the default model as one, plus `<|endoftext|>` as a special
    token): fastokens against `tokenizers` on the same texts."""
    path = _json_with_endoftext(tmp_path)
    tokenizer = load_tokenizer(TokenizerConfig(file=str(path)))
    texts = demo_slice()[::3] + multilingual()[::3]
    reference = Tokenizer.from_file(str(path))
    reference.encode_special_tokens = True
    want = [e.ids for e in reference.encode_batch(texts, add_special_tokens=False)]
    assert _fast_ids(tokenizer, texts) == want


def _json_with_endoftext(folder: Path) -> Path:
    proto = convert.load_proto(package_file(DEFAULT_PACKAGE_MODEL))
    data = json.loads(convert.tokenizer_json(proto))
    data["added_tokens"].append({"id": 32000, "content": "<|endoftext|>", "single_word": False,
                                 "lstrip": False, "rstrip": False, "normalized": False,
                                 "special": True})
    path = folder / "tokenizer.json"
    path.write_text(json.dumps(data, ensure_ascii=False))
    return path


def test_text_that_spells_a_special_token_is_text_in_every_backend(tmp_path: Path) -> None:
    default = load_tokenizer(TokenizerConfig())
    from_json = load_tokenizer(TokenizerConfig(file=str(_json_with_endoftext(tmp_path))))
    assert from_json.backend.token_to_id("<|endoftext|>") == 32000
    results = []
    for tokenizer in (default, from_json):
        for which in (tokenizer, dataclasses.replace(tokenizer, fast=None)):  # fast, reference
            ids = which.encode_batch([SPECIAL_TEXT])[0]
            assert not {0, 1, 2, 32000} & set(ids), (which.engine, which.fast, ids)
            results.append(ids)
    assert all(r == results[0] for r in results)
    assert default.decode(results[0]) == SPECIAL_TEXT


def test_a_model_the_conversion_does_not_cover_encodes_with_sentencepiece(
        tmp_path: Path) -> None:
    """A real unigram model, trained here on stdlib prose: encoded by sentencepiece,
    and the card says why."""
    spm.SentencePieceTrainer.train(sentence_iterator=iter(prose_paragraphs()),
                                   model_prefix=str(tmp_path / "uni"), vocab_size=400,
                                   model_type="unigram", minloglevel=2)
    config = TokenizerConfig(sentencepiece=str(tmp_path / "uni.model"))
    stage = Tokenize(TokenizeParams(tokenizer=config))
    facts = stage.run_facts()["encoder"]
    assert facts["engine"].startswith("sentencepiece ") and "not a BPE model" in facts["note"]
    assert "not a BPE model" in Tokenize.card_notes({"encoder": facts})[0]
    fast = Tokenize(TokenizeParams()).run_facts()["encoder"]
    assert "checked at load" in Tokenize.card_notes({"encoder": fast})[0]
    texts = prose_paragraphs()[:20]
    reference = spm.SentencePieceProcessor(model_file=str(tmp_path / "uni.model"))
    assert stage.tokenizer is not None
    assert stage.tokenizer.encode_batch(texts) == reference.encode(texts, out_type=int)


def test_the_conversion_checks_are_cached_beside_the_tokenizer_json(tmp_path: Path,
                                                                    monkeypatch) -> None:
    """The model's checks (why the conversion may be inexact, the tie probes) are kept in
    the cache with its tokenizer.json; a second load reads them, a damaged file is
    recomputed, and each load gives the same fast encoder and ids."""
    monkeypatch.setenv("LEMUR_DATA_CACHE", str(tmp_path))
    model = Path(package_file(DEFAULT_PACKAGE_MODEL)).read_bytes()
    proto = convert.load_proto(model)
    want = (convert.inexact_reason(proto), convert.tokenizer_json(proto),
            tuple(convert.tie_probes(proto)))
    texts = [p.read_text() for p in sorted((STDLIB / "json").glob("*.py"))]
    ids = []
    for damage in (False, False, True):
        if damage:
            for checks in tmp_path.glob("tokenizers/*.checks.json"):
                checks.write_text("{not json")
        assert convert.cached_conversion(model) == want
        tokenizer = load_tokenizer(TokenizerConfig())
        assert tokenizer.engine.startswith("fastokens") and tokenizer.note == ""
        ids.append(_fast_ids(tokenizer, texts))
    assert len(list(tmp_path.glob("tokenizers/*.checks.json"))) == 1
    assert ids[0] == ids[1] == ids[2]


def test_merges_are_written_as_strings_and_encode_as_pairs_do() -> None:
    """tokenizer.json's merges as `"a b"` strings (fastokens loads them in ~60% of the
    time of `["a", "b"]` pairs): the same ids as the pair form on real text."""
    import fastokens

    data = json.loads(convert.tokenizer_json(convert.load_proto(
        package_file(DEFAULT_PACKAGE_MODEL))))
    merges = data["model"]["merges"]
    assert all(isinstance(m, str) and m.count(" ") == 1 for m in merges)
    pairs = {**data, "model": {**data["model"], "merges": [m.split(" ") for m in merges]}}
    texts = demo_slice()[::2] + multilingual()[::4]
    ids = [split(*flat_encode(fastokens.Tokenizer.from_json_str(json.dumps(d)), texts))
           for d in (data, pairs)]
    assert ids[0] == ids[1] and sum(map(len, ids[0])) > 100_000
