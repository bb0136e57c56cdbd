"""The syntax stage on real files: grammars, metric, thresholds, limits, and a real build."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lemur_data.filters.syntax import balance as syntax_balance
from lemur_data.filters.syntax import check as syntax_check
from lemur_data.filters.syntax import mask as syntax_mask
from lemur_data.filters.syntax import preprocessor as syntax_preprocessor
from lemur_data.stages.base import ShardContext
from lemur_data.stages.storage import documents_table
from lemur_data.stages.syntax import Syntax, SyntaxParams
from tests.calibration import corpus, measure
from tests.conftest import STDLIB
from tests.fixtures import fixture, python_include

CTX = ShardContext(shard_id="s0", run_dir="", seed=0)
SAMPLE = 24  # files per language in the fast calibration check

# Bounds the sample must meet: false rejection % at most, detection % at least per
# damage (cut, delete_lines, drop_bracket). Languages meeting the brief on the full
# calibration are held to its 1% / 95%; the rest hold what the full calibration
# measured (README), so a regression fails. (HTML has no bracket tokens: n/a.)
STRICT = (1.0, (95.0, 95.0, 95.0))
BOUNDS: dict[str, tuple[float, tuple[float, float, float]]] = {
    **{language: STRICT for language in corpus.LANGUAGES},
    # Full calibration 95.6% (template `<...>` lines balance lexically); a sample of
    # ~20 copies misses 2.
    "C++": (1.0, (95.0, 85.0, 95.0)),
}


def _doc(i: int, text: str, lang: str | None, kind: str = "code") -> dict:
    return {"id": f"d{i}", "text": text, "source": "s", "kind": kind, "lang": lang,
            "path": f"f{i}"}


def test_every_grammar_loads_and_parses_real_code() -> None:
    assert len(syntax_check.GRAMMARS) >= 15
    for language in syntax_check.GRAMMARS:
        entry = next(e for e in corpus.listed(language) if corpus.exists(e))
        report = syntax_check.Checker(language).check_file(corpus.read(entry))
        assert report.total_bytes > 0
        assert report.error_share < 1.0, (language, entry)


def test_metric_counts_error_and_missing_nodes_on_a_real_file() -> None:
    source = (STDLIB / "json" / "decoder.py").read_bytes()
    checker = syntax_check.Checker("Python")
    assert checker.check(source).clean
    broken = checker.check(source.replace(b"class JSONDecoder(object):",
                                          b"class JSONDecoder(object) = ]:", 1))
    assert not broken.clean and broken.error_nodes >= 1 and broken.error_share > 0
    cut = (source[: source.index(b"def raw_decode")]
           + b"def raw_decode(self, s, idx=0:\n        pass\n")
    report = checker.check(cut)
    assert report.missing_nodes == 1 and report.error_bytes == 0
    assert syntax_check.rejects(report, 0.0, 0) is not None
    assert syntax_check.rejects(checker.check(source), 0.0, 0) is None


def test_ruby_stray_end_counts_as_an_error() -> None:
    entry = next(e for e in corpus.listed("Ruby") if corpus.exists(e))
    source = corpus.read(entry)
    checker = syntax_check.Checker("Ruby")
    assert checker.check(source).clean
    assert checker.check(source + b"\nend\n").error_nodes == 1


def test_balance_catches_damage_the_c_grammar_misses() -> None:
    """object.h is valid C the grammar errs on; balance is 0 there, not when damaged."""
    header = (python_include() / "object.h").read_bytes()
    checker = syntax_check.Checker("C")
    report = checker.check_file(header)
    assert report.unbalanced == 0
    assert syntax_check.rejects(report, 1.0, 10**6, 0) is None
    cut = checker.check_file(header[: len(header) // 2])  # the include guard's #endif gone
    assert cut.unbalanced >= 1
    at = header.index(b"{")  # first brace of the code: drop it
    dropped = checker.check_file(header[:at] + header[at + 1:])
    assert dropped.unbalanced == 1 and syntax_check.rejects(dropped, 1.0, 10**6, 0)
    # Macro bodies count apart and together: BEGIN `{` and END `}` cancel out.
    pair = b"#define BEGIN_NS namespace a {\n#define END_NS }\nBEGIN_NS int x; END_NS\n"
    assert syntax_check.Checker("C++").check_file(pair).unbalanced == 0
    assert syntax_check.Checker("C++").check_file(pair[:-len(b"END_NS\n")] + b"(\n"
                                                  ).unbalanced == 1
    # Brackets in strings, chars and comments do not count.
    assert syntax_balance.lexical_imbalance("C", b"char c = '{'; /* ( */ s = \"[\";\n") == 0


def test_shell_balance_sees_through_heredocs_case_and_quotes() -> None:
    """gzexe (gzip) is valid shell tree-sitter-bash errs on (a heredoc, `case`
    patterns ending in a bare `)`); balance is 0 there, not when damaged."""
    script = (fixture("gzip") / "bin" / "gzexe").read_bytes()
    assert b"<<'EOF'" in script and b"  -d) decomp=1; shift;;" in script
    checker = syntax_check.Checker("Shell")
    report = checker.check_file(script)
    assert report.error_nodes >= 1 and report.unbalanced == 0
    # The heredoc body and quotes hide what would count elsewhere.
    start = script.index(b"<<'EOF'")
    body = script.index(b"\n", start) + 1
    assert checker.check_file(script[:body] + b"if ( { [ `\n" + script[body:]).unbalanced == 0
    assert checker.check_file(script.replace(b"esac", b"'esac'", 1)).unbalanced >= 1
    # A pattern's `)` lost: the pattern runs over its line.
    assert checker.check_file(script.replace(b"  -d) decomp", b"  -d decomp", 1)).unbalanced >= 1
    assert checker.check_file(script.replace(b"\nEOF\n", b"\nEOX\n", 1)).unbalanced >= 1
    for closer in (b"\ndone", b"\nfi", b"\n  esac"):
        assert checker.check_file(script.replace(closer, b"\n", 1)).unbalanced >= 1, closer
    cut = script[: len(script) // 2]
    assert checker.check_file(cut).unbalanced >= 1
    small = {b"x=$(echo \"${a[0]}\" 'b)' $'c\\'' \\{} \\)) # (\n": 0,
             b"for i do echo $((i << 2)); done\n": 0,
             b"case $x in (a|b) y ;; [Yy]*) z ;; esac\n": 0,
             b"echo \"$(cat <<E\n)\nE\n)\"\n": 0,
             b"echo ${a\n": 1, b"echo 'a\n": 1, b"cat <<E\nx\n": 1}
    for text, expected in small.items():
        assert syntax_balance.lexical_imbalance("Shell", text) == expected, text


def _calibration_file(language: str, suffix: str) -> bytes:
    return corpus.read(next(e for e in corpus.listed(language) if e.endswith(suffix)))


def test_typescript_masks_see_through_grammar_gaps() -> None:
    """Real files tree-sitter-typescript errs on: variance annotations (`<in out T>`)
    and import types with type arguments; masked, they parse clean, and damage
    still shows."""
    for language, suffix in (("TSX", "react-router:package/src/link.tsx"),
                             ("TypeScript", "scheduled/schedulePromise.d.ts")):
        source = _calibration_file(language, suffix)
        checker = syntax_check.Checker(language)
        assert checker.check(source).error_nodes >= 1, suffix  # the grammar gap
        masked = syntax_mask.prepare(language, source)
        assert len(masked) == len(source) and masked != source
        assert checker.check_file(source).clean, suffix
        at = source.rindex(b"}")
        assert not checker.check_file(source[:at] + source[at + 1:]).clean
        assert not checker.check_file(source[: len(source) // 2]).clean
    kept = (b"for (const k in obj) { if (a < b, in_) f(out, 'in x'); }\n"
            b"const m = await reimport('x'); <p>Hello, in Paris, we</p>;\n")
    assert syntax_mask.mask_typescript(kept) == kept.replace(b", in Paris", b",    Paris")
    assert syntax_mask.mask_typescript(b"type A<in out T, out U = 1> = T") == (
        b"type A<       T,     U = 1> = T")


def test_csharp_conditionals_are_resolved_before_parsing() -> None:
    """Finalizer.cs (pythonnet) has `#if` lines inside a parameter list: valid C#
    tree-sitter-c-sharp errs on unless the conditional is resolved first."""
    source = _calibration_file("C#", "src/runtime/Finalizer.cs")
    checker = syntax_check.Checker("C#")
    assert checker.check(source).error_nodes >= 1
    assert checker.check_file(source).clean
    lost_endif = source.replace(b"#endif", b"", 1)
    assert checker.check_file(lost_endif).unbalanced >= 1
    # No macros in C#: a lone upper-case line is code, not blanked.
    assert syntax_mask.prepare("C#", b"enum E {\n  NONE\n}\n") == b"enum E {\n  NONE\n}\n"
    assert syntax_mask.prepare("C#", b"#if false\nx(\n#endif\n").split() == []


def test_php_balance_catches_what_the_grammar_reads_as_text() -> None:
    """A PHP file that lost its `<?php` line is valid PHP (all inline HTML) to the
    grammar; its braces no longer pair. Strings, comments, heredocs and inline HTML
    hide brackets from the code's count."""
    path = (fixture("php-symfony-console") / "usr/share/php/Symfony/Component/Console/Command"
            / "HelpCommand.php")
    source = path.read_bytes()
    assert source.startswith(b"<?php\n") and b"<<<" in source
    checker = syntax_check.Checker("PHP")
    assert checker.check_file(source).clean
    lines = source.split(b"\n")
    opener = next(i for i, line in enumerate(lines) if line.strip() == b"{")
    damaged = b"\n".join(line for i, line in enumerate(lines) if i not in (0, opener))
    report = checker.check_file(damaged)
    # One brace without its partner, and lines of code in a file with no open tag.
    assert report.error_nodes == report.missing_nodes == 0 and report.unbalanced == 2
    assert syntax_check.rejects(report, 0.0, 0, 0) == "unbalanced"
    # Templates: code braces span the HTML, the HTML's own braces pair by count.
    page = (b"<html><style>p { x: 1 }</style>\n<?php if ($a) { ?>\n<p>(1</p>\n"
            b"<?php } // ( ?>\n<?php $s = 'a{' . \"{$b['}']}\" . <<<EOT\n  ( {\n  EOT;\n"
            b"#[Attr(1)]\nfunction f() {}\n/* ] */ ?>\n<script>{}</script>\n")
    assert syntax_balance.php_imbalance(page) == 0
    assert syntax_balance.php_imbalance(page.replace(b"<script>{}", b"<script>{")) == 1
    assert syntax_balance.php_imbalance(page.replace(b"f() {}", b"f() {")) == 1
    assert syntax_balance.php_imbalance(page.replace(b"EOT;", b"EOX;")) >= 1


def test_html_balance_counts_always_closed_elements() -> None:
    entry = next(e for e in corpus.listed("HTML")
                  if corpus.exists(e) and b"</div>" in corpus.read(e))  # a page with divs
    page = corpus.read(entry)
    checker = syntax_check.Checker("HTML")
    assert checker.check_file(page).unbalanced == 0
    # Implied end tags (`</p>`, `</li>`) are valid HTML; a lost `</div>` is not.
    assert checker.check_file(b"<ul><li>a<li>b</ul><p>x<p>y").unbalanced == 0
    assert page.count(b"</div>") >= 1, entry
    lost = page.replace(b"</div>", b"", 1)
    assert checker.check_file(lost).unbalanced >= 1


def test_preprocessor_mask_keeps_offsets_and_first_branch() -> None:
    include = python_include()
    header = (include / "Python.h").read_bytes() + (include / "pyport.h").read_bytes()
    masked = syntax_preprocessor.mask_preprocessor(header)
    assert len(masked) == len(header)
    assert masked.count(b"\n") == header.count(b"\n")
    assert b"#endif" not in masked and b"#define" in masked
    source = b"#if 0\nbroken(\n#else\nint x;\n#endif\n#ifdef A\nint y;\n#else\nint y\n#endif\n"
    assert syntax_preprocessor.mask_preprocessor(source).split() == [b"int", b"x;", b"int", b"y;"]
    assert syntax_check.Checker("C").check_file(source).clean


def test_timeout_cancels_and_the_parser_is_reusable() -> None:
    checker = syntax_check.Checker("Python")
    big = (STDLIB / "typing.py").read_bytes() * 8
    with pytest.raises(syntax_check.ParseTimeout):
        checker.check(big, timeout_s=1e-6)
    small = (STDLIB / "json" / "decoder.py").read_bytes()
    again = checker.check(small, timeout_s=5.0)
    assert again.clean and again.total_bytes == len(small)


def test_stage_columns_reasons_and_unchecked_languages() -> None:
    python = (STDLIB / "json" / "decoder.py").read_text()
    broken = python.replace("class JSONDecoder(object):", "class JSONDecoder(object) = ]:", 1)
    docs = documents_table([
        _doc(0, python, "Python"),
        _doc(1, broken, "Python"),
        _doc(2, "(defun f (x) x)", "Common Lisp"),
        _doc(3, "Plain English prose.", "en", kind="text"),
        _doc(4, python * 3, "Python"),
        _doc(5, (STDLIB / "json" / "__init__.py").read_text(), None),
    ])
    stage = Syntax(SyntaxParams(max_bytes=len(python.encode()) + 10))
    stage.setup()
    result = stage.apply(docs, CTX)
    table = result.table
    assert table.num_rows == 6 and table.column("id").to_pylist() == [f"d{i}" for i in range(6)]
    assert result.reasons.to_pylist() == [None, "syntax_error", None, None,
                                          "too_large_to_parse", None]
    assert table.column("syntax_checked").to_pylist() == [True, True, False, False, False,
                                                          False]
    assert table.column("syntax_clean").to_pylist()[:3] == [True, False, None]
    shares = table.column("syntax_error_share").to_pylist()
    assert shares[0] == 0.0 and 0 < shares[1] < 1 and shares[2] is None
    assert [f.name for f in stage.added_columns()] == table.column_names[-6:]


def test_stage_thresholds_come_from_the_manifest_per_language() -> None:
    header = corpus.read(next(e for e in corpus.listed("C") if corpus.exists(e)))
    text = header.decode("utf-8", "replace") + "\nint broken( {\n"
    docs = documents_table([_doc(0, text, "C"), _doc(1, text, "C")])
    default = Syntax(SyntaxParams()).apply(docs, CTX)
    loose = Syntax(SyntaxParams(max_unbalanced={"C": 2})).apply(docs, CTX)
    strict = Syntax(SyntaxParams(max_unbalanced={"C": 2}, max_error_share={"C": 0.0},
                                 max_missing={"C": 0})).apply(docs, CTX)
    assert default.reasons.to_pylist() == ["unbalanced", "unbalanced"]
    assert default.table.column("syntax_unbalanced").to_pylist() == [2, 2]
    assert loose.reasons.to_pylist() == [None, None]
    assert strict.reasons.null_count == 0
    with pytest.raises(ValueError, match="no grammar"):
        SyntaxParams(max_error_share={"Klingon": 0.1})


@pytest.mark.parametrize("language", corpus.LANGUAGES)
def test_calibration_sample_meets_bounds(language: str) -> None:
    present = [e for e in corpus.listed(language) if corpus.exists(e)]
    entries = present[:: max(1, len(present) // SAMPLE)][:SAMPLE]  # spread over the roots
    assert len(entries) >= min(SAMPLE, 20), f"{language}: too few calibration files here"
    params = SyntaxParams()
    # The oracles every test machine has (compile(), bash, node, gcc); the validation
    # half's stored labels carry the others' verdicts (test_syntax_validation.py).
    measured = measure.measure(language, entries, fetched_oracles=False)
    rates = measure.rates(measured, params.share_for(language),
                          params.missing_for(language), params.unbalanced_for(language))
    max_false, detection = BOUNDS[language]
    assert rates["false_rejection"] <= max_false, rates
    for kind, least in zip(corpus.DAMAGES, detection, strict=True):
        if language == "HTML" and kind != "cut":
            # No bracket tokens in HTML; few files have multi-line tags, the only pairs
            # a line deletion can split (the full calibration has them).
            assert kind == "delete_lines" or rates[f"{kind}_n"] == 0, rates
        else:
            assert rates[f"{kind}_n"] >= 10, (kind, rates)
        assert rates[kind] >= least or not rates[f"{kind}_n"], (kind, rates)


def test_build_runs_syntax_then_dedup_on_ray(ray_session, tmp_path: Path,
                                             stdlib_tree: Path) -> None:
    from lemur_data.pipeline.build import build
    from lemur_data.pipeline.manifest import parse_manifest

    (stdlib_tree / "json" / "broken.py").write_text(
        (STDLIB / "json" / "decoder.py").read_text()[:3000])  # cut mid-file
    (stdlib_tree / "notes.lisp").write_text("(defun f (x) x)\n")
    manifest = {
        "name": "syntax-test", "seed": 1,
        "sources": [{"name": "tree", "kind": "code",
                     "reader": {"type": "tree", "root": str(stdlib_tree)}}],
        "stages": [{"syntax": {}}, {"exact_dedup": {}}],
    }
    result = build(parse_manifest(manifest, base_dir=tmp_path), str(tmp_path / "run"),
                   progress="none")
    stats = result.stats
    syntax = next(s for s in stats["stages"] if s["name"] == "syntax")
    assert syntax["removed_by_reason"]["syntax:syntax_error"]["docs"] >= 1
    kept = pa.concat_tables([pq.read_table(p) for p in
                             sorted((tmp_path / "run").glob("stages/*syntax*/*.parquet"))])
    checked = dict(zip(kept.column("path").to_pylist(),
                       kept.column("syntax_checked").to_pylist(), strict=True))
    assert any(path.endswith("notes.lisp") and not flag for path, flag in checked.items())
    assert all(flag for path, flag in checked.items() if path.endswith(".py"))


def _python_blocks(source: bytes) -> list[tuple[int, int, int]]:
    """(header's last line, first body line, the statement's column) of each block
    whose body starts on a line of its own."""
    import ast

    lines = source.split(b"\n")
    found = []
    for node in ast.walk(ast.parse(source)):
        for field in ("body", "orelse", "finalbody", "handlers"):
            body = getattr(node, field, None)
            if not (isinstance(body, list) and body and hasattr(node, "lineno")):
                continue
            first = body[0].lineno - 1
            header = first - 1
            while header >= 0 and not lines[header].rstrip().endswith(b":"):
                header -= 1
            if header >= 0 and first > header and not lines[first].lstrip().startswith(b"@"):
                found.append((header, first, node.col_offset))
    return found


def test_python_block_without_body_is_an_error() -> None:
    """tree-sitter-python accepts a header whose body was dedented or cut away;
    CPython does not ("expected an indented block"), nor does the stage."""
    source = (STDLIB / "json" / "decoder.py").read_bytes()
    checker = syntax_check.Checker("Python")
    assert checker.check_file(source).clean
    lines = source.split(b"\n")
    blocks = _python_blocks(source)
    assert len(blocks) >= 20
    broken = 0
    for header, first, column in blocks:
        dedented = lines[:first] + [b" " * column + lines[first].lstrip()] + lines[first + 1:]
        copy = b"\n".join(dedented)
        cut = b"\n".join(lines[: header + 1]) + b"\n"
        for damaged in (copy, cut):
            try:  # CPython is the oracle: count only the copies it rejects
                compile(damaged, "decoder.py", "exec")
                continue
            except SyntaxError:
                broken += 1
            report = checker.check_file(damaged)
            assert syntax_check.rejects(report, 0.0, 0) == "syntax_error", lines[header]
    assert broken >= len(blocks)
    # A docstring line ending in `:` with text after it, a dict over two lines, and a
    # header whose body starts after comment lines are valid.
    valid = (b'"""Returns:\nNone"""\nd = {1:\n2}\nif d:\n    # why\n\n    pass\n'
             b"else:  # c\n  x = 1\n")
    compile(valid, "valid.py", "exec")
    assert checker.check_file(valid).clean


def test_c_file_cut_inside_a_comment_or_string_is_unbalanced() -> None:
    """A header cut inside its licence comment balances its brackets (none yet);
    the open comment counts. So does a string still open at the end."""
    header = (fixture("libc6-dev") / "usr" / "include" / "stdio.h").read_bytes()  # glibc
    assert header.startswith(b"/*") and b"*/" in header
    checker = syntax_check.Checker("C")
    assert checker.check_file(header).unbalanced == 0
    in_comment = header[: header.index(b"*/") - 10]
    assert checker.check_file(in_comment).unbalanced == 1
    literal = header.index(b'"', header.index(b"#include"))
    assert checker.check_file(header[: literal + 3]).unbalanced >= 1
    for language, text in (("CSS", b"a { b: c }\n/* cut"), ("PHP", b"<?php\n$a = 1; /* cut"),
                           ("C++", b"int a; // ok\nchar *s = \"cut\\\"\n")):
        assert syntax_balance.lexical_imbalance(language, text) == 1, language
        closed = text + (b"*/\n" if b"/*" in text else b'"\n')
        assert syntax_balance.lexical_imbalance(language, closed) == 0, language


def test_cpp_raw_strings_hide_their_brackets() -> None:
    """pyarrow's json/test_common.h (valid C++, in every pyarrow wheel) writes JSON in raw
    strings, `R"({")"`: read as plain strings, 31 brackets were unbalanced and the demo
    removed it. Raw strings are hidden now; a bracket dropped from the code still counts,
    and so does a raw string the file's end cuts. In C, `R"(` is a name and a string."""
    import pyarrow

    header = (Path(pyarrow.get_include()) / "arrow" / "json" / "test_common.h").read_bytes()
    assert header.count(b'R"(') >= 4
    checker = syntax_check.Checker("C++")
    assert checker.check_file(header).unbalanced == 0
    at = header.index(b"{", header.index(b"namespace"))
    assert checker.check_file(header[:at] + header[at + 1:]).unbalanced == 1
    raw = header.index(b'R"(')
    assert syntax_balance.lexical_imbalance("C++", header[:raw + 6]) >= 1  # cut inside it
    assert syntax_balance.lexical_imbalance("C++", b'auto a = u8R"x(cut\n') == 1  # prefixed
    for text, cpp, c in ((b'auto a = R"({")";\n', 0, 2), (b'auto a = u8R"x(})x" ")x";\n', 0, 0),
                         (b'auto b = LR"()";\n', 0, 0),
                         (b'x = FOOR"(";\n', 0, 0)):  # FOOR: a name, then a plain string
        assert syntax_balance.lexical_imbalance("C++", text) == cpp, text
        assert syntax_balance.lexical_imbalance("C", text) == c, text


def test_digit_separators_are_numbers_not_char_literals() -> None:
    """libstdc++'s simd_x86.h writes `0xffe0'0000'0000'0000ull` (C++14 and C23 digit
    separators): its quotes were read as char literals running to the line end, 53
    brackets unbalanced. A number is one token now; a bracket dropped still counts, and
    `u8'a'` is still a char literal."""
    header = (fixture("libstdc++-12-dev") / "usr" / "include" / "c++" / "12" / "experimental"
              / "bits" / "simd_x86.h").read_bytes()
    assert b"0xffe0'0000'0000'0000ull" in header
    for language in ("C", "C++"):
        assert syntax_balance.lexical_imbalance(language, header) == 0, language
    at = header.index(b")", header.index(b"0x3f80'0000"))  # in code, not a comment
    assert syntax_balance.lexical_imbalance("C++", header[:at] + header[at + 1:]) >= 1
    assert syntax_balance.lexical_imbalance("C++", b"char c = u8'(';\nint n = 1'000;\n") == 0
    assert syntax_balance.lexical_imbalance("C++", b"char c = u8'(';\nint n = 1'000;(\n") == 1


def _package(name: str) -> Path:
    """A Debian package of tests/fixtures/fetch.py, unpacked as under `/`."""
    from tests.fixtures import fixture

    return fixture(name)


def test_rust_2015_try_and_other_grammar_gaps_are_masked() -> None:
    """serde 1.0.152 uses the 2015 `try!` macro, syn 1.0.107 a unit struct with a
    where clause, `~` and `$` as macro tokens, `raw` as a type name: valid Rust that
    tree-sitter-rust errs on; masked, they pass, and damage still shows."""
    serde = next((_package("librust-serde-dev") / "usr/share/cargo/registry").glob("serde-1.*"))
    syn = next((_package("librust-syn-dev") / "usr/share/cargo/registry").glob("syn-1.*"))
    checker = syntax_check.Checker("Rust")
    for path in (serde / "src/de/value.rs", serde / "src/ser/impls.rs",
                 syn / "src/error.rs", syn / "src/token.rs", syn / "src/expr.rs"):
        source = path.read_bytes()
        assert checker.check(source).error_nodes >= 1, path  # the grammar gap
        assert checker.check_file(source).clean, path
        masked = syntax_mask.prepare("Rust", source)
        assert len(masked) == len(source) and masked.count(b"\n") == source.count(b"\n")
        at = source.rindex(b"}")
        assert not checker.check_file(source[:at] + source[at + 1:]).clean, path
        assert not checker.check_file(source[: len(source) // 2]).clean, path
    assert syntax_mask.prepare("Rust", b"let p = &raw const x; r#try!(a); try!(b);") == (
        b"let p = &raw const x; r#try!(a); tr_!(b);")


def _bash_accepts(path: Path) -> bool:
    import subprocess

    return subprocess.run(["bash", "-O", "extglob", "-n", str(path)],
                          capture_output=True).returncode == 0


def test_shell_agrees_with_bash_on_bash_completion_scripts(tmp_path: Path) -> None:
    """Debian's bash-completion scripts (extglob patterns such as `-!(-*)[hv])`, `[^]]`
    bracket expressions, `${a/#/${p}[}`) pass `bash -O extglob -n` and the stage; a
    copy cut mid-line that bash rejects, the stage rejects too."""
    import random

    folder = _package("bash-completion") / "usr/share/bash-completion/completions"
    scripts = sorted(p for p in folder.iterdir() if p.is_file() and not p.is_symlink())
    assert len(scripts) >= 400
    checker = syntax_check.Checker("Shell")
    params = SyntaxParams()

    def rejected(data: bytes) -> bool:
        return syntax_check.rejects(checker.check_file(data), params.share_for("Shell"),
                                    params.missing_for("Shell"),
                                    params.unbalanced_for("Shell")) is not None

    valid = [p for p in scripts if _bash_accepts(p)]
    assert len(valid) >= 0.95 * len(scripts)
    false = [p.name for p in valid if rejected(p.read_bytes())]
    assert len(false) <= 0.01 * len(valid), false
    rng = random.Random(17)
    broken = caught = 0
    for path in rng.sample(valid, 60):
        data = path.read_bytes()
        copy = data[: rng.randrange(len(data) // 4, 3 * len(data) // 4)]
        (tmp_path / "cut").write_bytes(copy)
        if not _bash_accepts(tmp_path / "cut"):
            broken += 1
            caught += rejected(copy)
    assert broken >= 40 and caught >= 0.95 * broken, (caught, broken)


def test_php_file_that_lost_its_open_tag_is_unbalanced() -> None:
    """Without its `<?php` line a class file is all text to PHP (`php -l` accepts it)
    and its braces still pair; its code lines give it away. Pages that are all HTML
    start with a tag and stay valid."""
    folder = _package("php-symfony-console") / "usr/share/php/Symfony/Component/Console"
    files = sorted(folder.rglob("*.php"))[:60]
    assert len(files) >= 40
    checker = syntax_check.Checker("PHP")
    for path in files:
        source = path.read_bytes()
        assert checker.check_file(source).clean, path
        at = source.index(b"<?php")
        tagless = source[:at] + source[source.index(b"\n", at) + 1:]
        assert checker.check_file(tagless).unbalanced >= 1, path
    page = b"<!DOCTYPE html>\n<script>\nfunction f() {}\n$x = 1;\n</script>\n"
    assert checker.check_file(page).unbalanced == 0


def test_gaps_the_redrawn_validation_half_found_are_closed() -> None:
    """Valid files the redrawn validation half rejected, each a form the grammar or the
    balance count did not know; they pass, and the same file cut still fails.
    - libgpg-error's `#if 0 /* comment */` branch holding a lone `}`;
    - @types/node's `global { }` inside `declare module`, typescript-eslint's
      `abstract: boolean;` property, TanStack's `({ behavior }?: O) => void`;
    - PEAR's Text_Wiki `$s{$i}` string offsets (PHP 5/7);
    - pbuilder's `for ((i=1; i < $#; i++)) { ...; }` (bash's brace-bodied for)."""
    files = [
        ("C", fixture("libgpg-error-dev") / "usr/include/x86_64-linux-gnu/gpg-error.h"),
        ("TypeScript", fixture("@types/node") / "node/buffer.d.ts"),
        ("TypeScript", fixture("@types/node") / "node/buffer.buffer.d.ts"),
        ("TypeScript",
         fixture("@typescript-eslint/types") / "package/dist/generated/ast-spec.d.ts"),
        ("TypeScript", fixture("@tanstack/virtual-core") / "package/dist/esm/index.d.ts"),
        ("PHP", fixture("php-text-wiki") / "usr/share/php/Text/Wiki.php"),
        ("Shell", fixture("pbuilder") / "usr/lib/pbuilder/pbuilder-modules"),
    ]
    params = SyntaxParams()
    for language, path in files:
        checker = syntax_check.Checker(language)
        source = path.read_bytes()

        def rejected(data: bytes, language: str = language,
                     checker: syntax_check.Checker = checker) -> str | None:
            return syntax_check.rejects(checker.check_file(data), params.share_for(language),
                                        params.missing_for(language),
                                        params.unbalanced_for(language))

        assert rejected(source) is None, path
        masked = syntax_mask.prepare(language, source)
        assert len(masked) == len(source) and masked.count(b"\n") == source.count(b"\n")
        at = source.rindex(b"}")
        assert rejected(source[:at] + source[at + 1:]) is not None, path
    assert syntax_mask.prepare("PHP", b"$c = $this->s{$i} . $m[2]{0};") == (
        b"$c = $this->s[$i] . $m[2][0];")
    assert syntax_balance.shell_imbalance(b"for x in {1..3}; do\n echo $x\ndone\n") == 0
    assert syntax_balance.shell_imbalance(b"for ((i=0; i<3; i++)) {\n echo\n") == 1


def test_forms_an_untouched_probe_found_are_read_as_their_language_does() -> None:
    """Valid forms a probe of 350 packages nobody tuned on showed rejected (each the
    shape of the real file's line; bash -n, rustc and tsc accept them); a damaged
    copy of each is still rejected."""
    import subprocess

    cases = [
        # freefem++'s AFunction.hpp: a conditional commented out line by line
        ("C++", b"#ifndef G\n#define G\nint a;\n/* #ifdef T\n# include <x>\n#else\n"
                b"# include <y>\n#endif\n*/\n//*cast<T *>(p)\nint b;\n#endif\n"),
        # unic-char-range: underscores in a unicode escape
        ("Rust", b"fn f() -> (char, char) {\n    ('\\u{0}', '\\u{2_FFFF}')\n}\n"),
        # fastify's tsd tests: a generic function type as the first type argument
        ("TypeScript", b"expectType<<E extends Error = F>(err?: E | null) => void>(done)\n"),
        # dphys-config: a heredoc in backquotes ended by `END\x60"`
        ("Shell", b"T=\"`cut -f 1 -d '#' << END-LIST | \\\n    grep -v x\n"
                  b"1002:4750  ati  # ATI\nEND-LIST`\"\necho \"$T\"\n"),
        # pass-tomb: `esac done`
        ("Shell", b"while true; do case $1 in\n\t-q) Q=1; shift ;;\n\t--) break ;;\n"
                  b"esac done\n"),
        # probes of other seeds: escalade's index.d.ts, ttf2ufm's x2gs, dracut's nfs-lib
        ("TypeScript", b"type P<T> = T | Promise<T>;\nexport default function (directory: "
                       b"string, callback: C): Promise<string | void>;\n"),
        ("Shell", b"if [ -r $F ]\nthen {\n\t. $F\n} else {\n\techo \"no $F\"\n\texit 1\n"
                  b"} fi\n"),
        ("Shell", b'case "$1" in\n    nfs://*) a "$1" ;;\n    nfs:*[*) b "$1" ;;\n'
                  b"    nfs:*:*:/*) c \"$1\" ;;\nesac\n"),
        # libstdc++'s tr1: `#if STD` (empty) `#elif TR1` `namespace tr1 {`, closed under
        # `#if ! STD && TR1` further down
        ("C++", (fixture("libstdc++-12-dev") / "usr/include/c++/12/tr1/exp_integral.tcc")
         .read_bytes()),
        # ... and with a `# define` in the first branch (probe seed 17)
        ("C++", (fixture("libstdc++-12-dev") / "usr/include/c++/12/tr1/gamma.tcc")
         .read_bytes()),
    ]
    params = SyntaxParams()
    for language, source in cases:
        if language == "Shell":
            assert subprocess.run(["bash", "-n"], input=source).returncode == 0, source
        checker = syntax_check.Checker(language)
        verdict = syntax_check.rejects(checker.check_file(source), params.share_for(language),
                                       params.missing_for(language),
                                       params.unbalanced_for(language))
        assert verdict is None, (language, source, checker.check_file(source))
        cut = source[: len(source) // 2] + b"\n{(\n"
        assert syntax_check.rejects(checker.check_file(cut),
                                    params.share_for(language), params.missing_for(language),
                                    params.unbalanced_for(language)) is not None, language


def test_rust_foreign_types_in_extern_blocks_are_read() -> None:
    """wasm-bindgen's crates (js-sys, web-sys: thousands of generated files in The
    Stack) declare JavaScript classes as `pub type Array;` inside `extern "C" { }`,
    which rustc parses and tree-sitter-rust errs on; a probe of random crates rejected
    48 of web-sys' files for it. Masked, they pass, and damage still shows."""
    checker = syntax_check.Checker("Rust")
    crate = next((fixture("librust-js-sys-dev") / "usr/share/cargo/registry").glob("js-sys-*"))
    for path in (crate / "src/lib.rs", crate / "src/Temporal.rs"):
        source = path.read_bytes()
        assert checker.check(source).error_nodes >= 5, path  # the grammar gap
        assert checker.check_file(source).clean, path
        at = source.rindex(b"}")
        assert not checker.check_file(source[:at] + source[at + 1:]).clean, path
    assert syntax_mask.prepare("Rust", b'extern "C" { pub type  A ; }') == (
        b'extern "C" { pub fn  A() ; }')


def test_flow_typed_javascript_is_read_with_the_typescript_grammar() -> None:
    """Vue 2's sources are JavaScript with Flow types (`/* @flow */`): `node --check`
    and the JavaScript grammar reject them, yet The Stack labels them JavaScript and
    they are real code. A probe of random packages rejected 43 of 1,762 JavaScript
    files for it. Files with the pragma are read with the TypeScript grammar."""
    params = SyntaxParams()
    checker = syntax_check.Checker("JavaScript")
    plain = syntax_check.Checker("JavaScript")

    def rejected(report: syntax_check.SyntaxReport) -> bool:
        return syntax_check.rejects(report, params.share_for("JavaScript"),
                                    params.missing_for("JavaScript"),
                                    params.unbalanced_for("JavaScript")) is not None

    sources = sorted((fixture("node-vue") / "usr/share/nodejs/vue/src").rglob("*.js"))
    flow = [p.read_bytes() for p in sources if syntax_check._FLOW_PRAGMA.match(p.read_bytes())]
    assert len(flow) >= 100
    assert sum(rejected(plain.check(data)) for data in flow) >= len(flow) // 2  # the gap
    assert sum(rejected(checker.check_file(data)) for data in flow) <= len(flow) // 20
    for data in flow[::10]:
        cut = data[: len(data) // 2] + b"\n{(\n"
        assert rejected(checker.check_file(cut))


def test_bootstrap_3_css_with_legacy_hacks_is_kept() -> None:
    """Bootstrap 3.4's CSS (Debian's libjs-bootstrap) carries IE hacks browsers skip:
    `*zoom: 1`, `filter: progid:DXImageTransform...`, `width: auto\\9`. tree-sitter-css
    invents tokens there, so the grammar's verdict does not reject CSS (browsers recover
    from any bad declaration); brackets still do, and a bracket dropped from the same
    file is caught."""
    css = fixture("libjs-bootstrap") / "usr/share/javascript/bootstrap/css"
    files = sorted(css.glob("*.css"))
    assert len(files) == 4 and any(b"progid:" in p.read_bytes() for p in files)
    texts = [p.read_text() for p in files]
    docs = documents_table([_doc(i, t, "CSS") for i, t in enumerate(texts)])
    stage = Syntax(SyntaxParams())
    stage.setup()
    result = stage.apply(docs, CTX)
    assert result.reasons.to_pylist() == [None] * 4
    assert min(result.table.column("syntax_missing_nodes").to_pylist()) >= 1  # the hacks
    damaged = documents_table([_doc(0, texts[2].replace("}", "", 1), "CSS")])
    assert stage.apply(damaged, CTX).reasons.to_pylist() == ["unbalanced"]


def _stage_reasons(texts: list[str], language: str) -> list[str | None]:
    stage = Syntax(SyntaxParams())
    stage.setup()
    docs = documents_table([_doc(i, t, language) for i, t in enumerate(texts)])
    return stage.apply(docs, CTX).reasons.to_pylist()


def test_html_as_browsers_read_it_is_kept() -> None:
    """Real documentation pages as browsers accept them: `<p>` and `<li>` never closed,
    `<html>`/`<body>` end tags left out, a stray `</ul>` or `</body>`, unquoted
    attributes (`<p align=center>`), `<a name=x>` never closed (libntl-dev, libvorbis-dev,
    ruby-redcloth), and Bootstrap 2's docs whose Jinja-like markup makes the grammar
    invent a token. html5lib (the WHATWG algorithm) reports none of them broken; the
    stage keeps all. A page cut inside its markup, or that lost a `</div>`, is removed."""
    from tests.calibration import oracle

    pages = [fixture("libntl-dev") / "usr/share/doc/libntl-dev/NTL/tour-ex1.html",
             fixture("libvorbis-dev") / "usr/share/doc/libvorbis-dev/html/vorbisfile/"
             "seeking.html",
             fixture("ruby-redcloth") / "usr/share/doc/ruby-redcloth/rdoc/index.html",
             fixture("twitter-bootstrap") / "package/docs/customize.html"]
    data = [p.read_bytes() for p in pages]
    assert data[0].count(b"<p") > 50 * data[0].count(b"</p>") and b"<p align=center>" in data[0]
    assert b"</html>" not in data[2].lower() and data[1].count(b"</ul>") > data[1].count(b"<ul")
    assert all(oracle.html(d) for d in data)
    texts = [d.decode() for d in data]
    assert _stage_reasons(texts, "HTML") == [None] * 4
    div = texts[3].index("<div", len(texts[3]) // 2)
    damaged = [texts[3][:div + 40], texts[3].replace("</div>", "", 1)]
    assert not any(oracle.html(t.encode()) for t in damaged)
    assert _stage_reasons(damaged, "HTML") == ["unbalanced"] * 2


def test_bootstrap_2_css_and_python_2_are_kept() -> None:
    """Bootstrap 2.1's CSS (npm's twitter-bootstrap) with its IE hacks, and Python 2 only
    code (BeautifulSoup 3: `print "..." % x`, which `compile()` rejects): tree-sitter-
    python reads Python 2's print statement, so the stage keeps it, as The Stack labels
    it Python; cut copies of both are removed."""
    css = (fixture("twitter-bootstrap") / "package/docs/assets/css/bootstrap.css").read_text()
    assert "*zoom: 1" in css and "progid:" in css and "\\9" in css
    assert _stage_reasons([css, css[: len(css) // 2]], "CSS") == [None, "unbalanced"]
    soup = fixture("BeautifulSoup") / "BeautifulSoup-3.2.2/BeautifulSoup.py"
    code = soup.read_text()
    assert 'print "' in code
    with pytest.raises(SyntaxError):
        compile(code, str(soup), "exec")
    cut = code[: code.index("\n", code.index("def ", len(code) // 2)) + 1]
    assert _stage_reasons([code, cut], "Python") == [None, "syntax_error"]
