"""What a grammar cannot see through, blanked before parsing (same length, same offsets).

Some valid files make a tree-sitter grammar err where the language is fine:
- C, C++ and C# are parsed as written, not as preprocessed: conditional
  compilation is resolved first (preprocessor.py);
- Rust: the 2015 edition's `try!(...)` macro (`try` is a 2018 keyword to the
  grammar), `~` and a lone `$` in macro token trees (`Token![~]`), a unit struct with a `where`
  clause (`struct S where T: Send;`), `raw` as a type name (`Option<raw>`), foreign
  types in `extern` blocks (`pub type Navigator;`, web-sys), `_` in `'\\u{2_FFFF}'`;
- JavaScript (and TypeScript): reserved words exported under their own name
  (`export { null_ as null }`);
- PHP 5 and 7: string offsets in braces (`$s{$i}`), removed in PHP 8;
- Python 2 (The Stack labels it Python): `exec code in ns` with an expression for
  code, `async` / `await` as names, keywords as attribute names (Jython's
  `future.await`, `Signal.raise(...)`);
- TypeScript and TSX: a signature line starting with type parameters (`<T>(x: T): T`
  in an interface; TypeScript reads no type arguments across a line break),
  escapes in template literal types, `type` as an exported name,
  variance annotations (`interface A<in out T>`, TS 4.7) and
  import types with type arguments (`import("./x").Y<T>`, what `tsc` writes in
  `.d.ts` files), `global { }` nested in `declare module`, `abstract` as a
  property name, optional destructured parameters (`({ a }?: T) => void`) and
  anonymous `export default function (x: T): R;` signatures,
  which tree-sitter-typescript 0.23 does not know.
Each mask rewrites only such spans, with blanks or an identifier of the same length,
so an error share or an offset still refers to the original file, and the rest of
the file keeps meeting the strict grammar. The TypeScript masks are applied only to
files the grammar errs on (`MASKED_ON_ERROR`; Checker.check_file parses again), and
so are those of Rust, Python, JavaScript and PHP.
"""

from __future__ import annotations

import re

from .preprocessor import BLANKS, PREPROCESSED, blank, mask_conditionals

# TypeScript: `in`, `out` or `in out` before a type parameter's name, after `<` or `,`
# (the name is followed by `extends`, `=`, `,` or `>`). A lone `in` between two
# expressions never sits right after `<` or `,` with such a tail.
_VARIANCE = re.compile(rb"([<,][ \t\r\n]*)(in[ \t\r\n]+out|in|out)"
                       rb"(?=[ \t\r\n]+[A-Za-z_$][\w$]*[ \t\r\n]*(?:extends\b|[,=>]))")
# `import("x")` (a type or a dynamic import): where it is valid, an identifier is too.
# The pattern starts with its literal (no `\b`) so the engine skips to candidates; the
# byte before is checked in `_identifier`.
_IMPORT_CALL = re.compile(rb"""import[ \t]*\([ \t]*(?:"[^"\\\n]*"|'[^'\\\n]*')[ \t]*\)""")
# A call or construct signature with type parameters opening its line (`\t<T>(x: T): T`
# in an interface): TypeScript allows no line break before a type's `<`, so the line
# starts a new member; the grammar reads it as type arguments of the line before. The
# last blank of its indentation becomes the `;` separating the members.
_SIGNATURE_LINE = re.compile(rb"\n([ \t]*)[ \t]<"
                             rb"(?=[A-Za-z_$][\w$]*(?:[ \t]+extends\b|[ \t]*[,>=]))")
# Escapes in template literal types (`\`${infer L}\\{${infer R}\\}\``), which the grammar
# reads only in template strings of values: made two plain characters.
_ESCAPE = re.compile(rb"\\[^\r\n]")
# `type` as the name in an export specifier (`export { type as interface }`): the
# grammar takes it for the `type` modifier.
_TYPE_NAME = re.compile(rb"(?<![\w$.])type(?=[ \t]+as[ \t]+[A-Za-z_$])")
# `global { ... }` augmenting the global scope from inside `declare module "x" { }`
# (@types/node): the grammar knows only `declare global`; blanked, the block is a
# plain statement block holding the same declarations.
_NESTED_GLOBAL = re.compile(rb"(?m)^([ \t]*)global(?=[ \t]*\{)")
# A generic function type as the first type argument (`expectType<<T>(x: T) =>
# void>(f)`, tsd tests): the grammar lexes `<<` as a shift; the inner type
# parameters are blanked (`expectType< (x: T) => void>(f)` reads the same way).
_GENERIC_FUNCTION_ARGUMENT = re.compile(rb"<(<[A-Za-z_$][^<>()\n]*>)(?=[ \t]*\()")
# `export default function (x: T): R;`, an anonymous default function signature in a
# .d.ts file, which the grammar takes only with a body: named `default_` (`export
# function default_(...)`, the same length; the space before `(` pays for the `_`).
_DEFAULT_SIGNATURE = re.compile(rb"default([ \t]+)function([ \t]+)\(")
# `abstract` as a property name (`abstract: boolean;`), which the grammar takes for
# the modifier; renamed to an identifier of the same length.
_ABSTRACT_NAME = re.compile(rb"(?<![\w$.])abstract(?=[ \t]*\??[ \t]*:)")
# An optional destructured parameter in a signature (`({ behavior }?: Options) =>
# void`, as tsc writes .d.ts files): the `?` is blanked.
_OPTIONAL_PATTERN = re.compile(rb"(?<=\})\?(?=[ \t]*:)")
_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")
# Languages whose masks only matter where the grammar errs: the checker parses the
# file as is and parses the masked bytes only if that has errors (and the mask
# changed something), so clean files pay nothing.
MASKED_ON_ERROR = frozenset({"TypeScript", "TSX", "Rust", "Python", "JavaScript", "PHP"})

# JavaScript (and TypeScript): a reserved word as the exported name in an export clause
# (`export { null_ as null, void_ as void }`, valid since ES2015), which the grammar
# refuses; renamed to an identifier of the same length.
_EXPORTED_KEYWORD = re.compile(
    rb"(?<=\bas[ \t])(?:null|void|true|false|new|delete|typeof|in|instanceof|function"
    rb"|class|const|let|var|if|else|for|while|do|return|break|continue|switch|case|throw"
    rb"|try|catch|finally|this|super|import|export|extends|yield|await|enum|with"
    rb"|debugger)(?=[ \t\r\n]*[,}])")

# Python 2's exec statement (`exec f.read() in g, l`): the grammar takes only a name
# or a string after `exec`; `_ =  expr in g, l` is an assignment of the same length.
_PY_EXEC = re.compile(rb"(?m)^([ \t]*)exec[ \t](?=[ \t]*[^\s(=.,)])")
# Keywords as attribute names (Jython calls Java methods so named) and Python 3.7's
# keywords as names (`def f(self, async)`, `async=True`).
_PY_KEYWORD_ATTRIBUTE = re.compile(rb"(?<=\.)(?:await|async|raise|print|exec)\b")
_PY_KEYWORD_NAME = re.compile(rb"(?<![\w.])(?:async|await)(?=[ \t]*[,)=:\].])")

# Rust 2015: `try!(expr)`, a macro named `try`; renamed to another 3-byte name. `r#try!`
# (2018 spelling of the same macro) is left alone: the grammar reads it.
_RUST_TRY = re.compile(rb"(?<![\w#])try(?=[ \t]*![ \t]*[(\[{])")
# `~`: no Rust operator since 2014, still a token inside macro token trees.
# `struct Name<...> where ...;`: a unit struct with a where clause (the grammar wants
# `{` or `(` after `where`); the clause is blanked.
_RUST_UNIT_WHERE = re.compile(rb"(\bstruct[ \t\r\n]+[A-Za-z_]\w*[ \t\r\n]*(?:<[^;{}()]*>)?"
                              rb"[ \t\r\n]*)(where\b[^;{}()]*)(?=;)")
# A lone `$` in a token tree (`[$] => ...` matches the `$` token itself).
_RUST_LONE_DOLLAR = re.compile(rb"\$(?=[ \t\r\n\])},;])")
# `type Name;` in an `extern` block (a foreign type: wasm-bindgen's web-sys, js-sys),
# which the grammar takes only in traits: made `fn Name();`, the same length.
_RUST_FOREIGN_TYPE = re.compile(rb"(?<![\w#])type([ \t]+[A-Za-z_]\w*)[ \t]*;")
# `'\u{2_FFFF}'`: underscores in a unicode escape (unic-char-range), which the
# grammar's escape pattern lacks; each made a `0`.
_RUST_UNICODE_ESCAPE = re.compile(rb"\\u\{[0-9A-Fa-f]*_[0-9A-Fa-f_]*\}")
# `raw` used as a name (syn's `Option<raw>`), but not `&raw const` / `&raw mut`.
_RUST_RAW = re.compile(rb"(?<![\w#])raw(?![\w!])(?![ \t\r\n]+(?:const|mut)\b)")


def _after_word(match: re.Match[bytes]) -> bool:
    start = match.start()
    return start > 0 and match.string[start - 1] in _WORD_BYTES


def _default_named(match: re.Match[bytes]) -> bytes:
    """`default function (` -> `function default_(` (the patterns start with their
    literal, so the engine skips to candidates; the byte before is checked here)."""
    if _after_word(match):
        return match.group()
    return b"function" + match.group(1) + b"default" + b"_" * len(match.group(2)) + b"("


def _type_parameters_blanked(match: re.Match[bytes]) -> bytes:
    """`f<<T>(x: T) => R>`: the inner `<T>` blanked, after a name only."""
    if not _after_word(match):
        return match.group()
    return b"<" + blank(match.group(1))


def _variance_blanked(match: re.Match[bytes]) -> bytes:
    return match.group(1) + blank(match.group(2))


def _identifier(match: re.Match[bytes]) -> bytes:
    if _after_word(match):  # `reimport(...)`, `$import(`
        return match.group()
    return b"_" * (match.end() - match.start())


def mask_typescript(data: bytes) -> bytes:
    """`data` with variance annotations blanked, `import("x")` made an identifier,
    a `;` before each signature line that starts with type parameters, escapes made
    plain characters (template literal types), `type` as an exported name and
    `abstract` as a property name renamed, a nested `global` and the `?` of an
    optional destructured parameter blanked."""
    data = _VARIANCE.sub(_variance_blanked, data)
    data = _SIGNATURE_LINE.sub(rb"\n\1;<", data)
    if b"`" in data and b"\\" in data:
        data = _ESCAPE.sub(b"__", data)
    if b"type" in data:
        data = _TYPE_NAME.sub(b"_ype", data)
    if b"global" in data:
        data = _NESTED_GLOBAL.sub(rb"\1      ", data)
    if b"abstract" in data:
        data = _ABSTRACT_NAME.sub(b"abstrac_", data)
    if b"}?" in data:
        data = _OPTIONAL_PATTERN.sub(b" ", data)
    if b"default" in data:
        data = _DEFAULT_SIGNATURE.sub(_default_named, data)
    if b"<<" in data:
        data = _GENERIC_FUNCTION_ARGUMENT.sub(_type_parameters_blanked, data)
    data = mask_javascript(data)
    if b"import" in data:
        data = _IMPORT_CALL.sub(_identifier, data)
    return data


# PHP 5/7's string offset in braces (`$s{$i}`, `$m[2]{0}`), gone in PHP 8 but common
# in The Stack's PHP (PEAR-era code): made the `[...]` offset it means.
_PHP_BRACE_OFFSET = re.compile(rb"(\$[A-Za-z_]\w*(?:->[A-Za-z_]\w*|\[[^\]\n]*\])*)"
                               rb"\{([^{}\n]*)\}")


def mask_php(data: bytes) -> bytes:
    """`data` with PHP 5's `$s{$i}` string offsets written `$s[$i]`; same length."""
    if b"{" in data:
        data = _PHP_BRACE_OFFSET.sub(rb"\1[\2]", data)
    return data


def _where_blanked(match: re.Match[bytes]) -> bytes:
    return match.group(1) + match.group(2).translate(BLANKS)  # newlines kept


def _foreign_fn(match: re.Match[bytes]) -> bytes:
    spaces = match.end() - match.start() - len(b"type") - len(match.group(1)) - 1
    return b"fn" + match.group(1) + b"()" + b" " * spaces + b";"


def mask_rust(data: bytes) -> bytes:
    """`data` with 2015 `try!` renamed, `~` and a lone `$` made `!`, unit-struct where
    clauses blanked, `raw` as a name renamed; same length."""
    if b"try" in data:
        data = _RUST_TRY.sub(b"tr_", data)
    if b"~" in data:
        data = data.replace(b"~", b"!")
    if b"$" in data:
        data = _RUST_LONE_DOLLAR.sub(b"!", data)
    if b"where" in data:
        data = _RUST_UNIT_WHERE.sub(_where_blanked, data)
    if b"raw" in data:
        data = _RUST_RAW.sub(b"ra_", data)
    if b"extern" in data and b"type" in data:
        data = _RUST_FOREIGN_TYPE.sub(_foreign_fn, data)
    if b"\\u{" in data:
        data = _RUST_UNICODE_ESCAPE.sub(lambda m: m.group().replace(b"_", b"0"), data)
    return data


def _renamed(match: re.Match[bytes]) -> bytes:
    return b"_" * (match.end() - match.start())


def mask_python(data: bytes) -> bytes:
    """Python 2 and 3.6 forms the grammar lacks, rewritten to the same length."""
    if b"exec" in data:
        data = _PY_EXEC.sub(rb"\1_ =  ", data)
    if b"." in data:
        data = _PY_KEYWORD_ATTRIBUTE.sub(_renamed, data)
    if b"async" in data or b"await" in data:
        data = _PY_KEYWORD_NAME.sub(_renamed, data)
    return data


def mask_javascript(data: bytes) -> bytes:
    """`data` with reserved words exported under their own name renamed; same length."""
    if b" as " in data:
        data = _EXPORTED_KEYWORD.sub(_renamed, data)
    return data


def mask(language: str, data: bytes) -> tuple[bytes, int]:
    """The bytes to parse for a file in `language` (same length as `data`), and the
    conditionals it leaves unclosed (C, C++, C#; 0 elsewhere)."""
    if language in PREPROCESSED:
        return mask_conditionals(data)
    if language == "C#":
        return mask_conditionals(data, lone_macros=False)
    if language == "TypeScript" or language == "TSX":
        return mask_typescript(data), 0
    if language == "Rust":
        return mask_rust(data), 0
    if language == "Python":
        return mask_python(data), 0
    if language == "JavaScript":
        return mask_javascript(data), 0
    if language == "PHP":
        return mask_php(data), 0
    return data, 0


def prepare(language: str, data: bytes) -> bytes:
    """The bytes to parse for a file in `language` (same length as `data`)."""
    return mask(language, data)[0]
