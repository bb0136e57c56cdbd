"""Shell balance: keywords, brackets, quotes and heredocs a script leaves unclosed.

tree-sitter-bash errs on valid heredocs and `case` forms as often as on damaged
files, so for Shell this count decides (see syntax_check). Pure: bytes in, a count out.
It runs in Python, token by token: the one lexer here with state a single regex
cannot carry (keywords count at a command's first word only).
"""

from __future__ import annotations

import re

# A small lexer hides comments, quoted strings, escapes and heredoc bodies, and pairs
# what opens with what closes: if/fi, case/esac, do/done, `(`/`)`, `$(`/`)`,
# `${`/`}`, `{`/`}`, `[`/`]` (test brackets, globs, subscripts), `"`, backquotes. A
# quote or heredoc left open at the end counts too. Parsing stays with the grammar;
# this only has to agree with bash on which file closes everything.

# An extglob pattern (`@(a|b)`, `!(-*)[hv]`, `+([0-9])`): with `shopt -s extglob`,
# which bash-completion scripts and many others set, its parentheses and `|` belong
# to the word (two levels of nesting).
_EXTGLOB = (rb"[?*+@!]\((?:[^()\n]|[?*+@!]?\((?:[^()\n])*\))*\)"
            # A bracket expression whose first member is `]` (`[^]]`, `[]a]`): that `]`
            # closes nothing.
            rb"|\[[!^]?\][^\]\s]*\]")

# Command context: one token per match, blanks before it included (blank lines after a
# newline too); `word` runs hold no bracket, quote or `$(`.
_SH_COMMAND = re.compile(rb"""[ \t\r]*(?:
 (?P<nl>\n[ \t\r\n]*)
|(?P<esc>\\(?:\{\}|.)?)
|(?P<comment>(?<![^ \t\n;&|()])\#[^\n]*)
|(?P<sq>'[^']*'?)
|(?P<ansi>\$'[^'\\]*(?:\\.[^'\\]*)*'?)
|(?P<here><<<|<<(?P<dash>-?)[ \t]*(?:'(?P<q1>[^'\n]*)'|"(?P<q2>[^"\n]*)"
   |\\?(?P<bare>[^\s;&|()<>"'`]+)))
|(?P<op>\$\(\(|\$\(|\$\{|;;&|;;|;&|&&|\|\||\|&|[<>]\(|[;&|()`"\[\]{}])
|(?P<redir>[<>]+&?)
|(?P<word>(?:[^\s;&|()<>"'`\\$\[\]{}?*+@!]+|""" + _EXTGLOB + rb"""|[?*+@!]|\$(?![('{"]))+
  |\$)
|(?P<end>\Z)|(?P<other>.))""", re.S | re.X)
# Arguments after a command's first word: no keyword there, so one match for the run
# (a word starting with `#` would be a comment).
# The regular expression after `=~` in `[[ ... ]]`: bash reads its brackets and
# parentheses as the regex's own, up to the `]]` (one line).
_REGEX_MATCH = rb"=~[ \t]+[^\n]*?(?=[ \t]+\]\])"
_SH_ARGUMENTS = re.compile(rb"""(?:[ \t\r]*(?:""" + _REGEX_MATCH + rb"""|""" + _EXTGLOB
                           + rb"""|[^\s;&|()<>"'`\\$\[\]{}\#]
                                |\$(?![('{"]))
                                (?:[^\s;&|()<>"'`\\$\[\]{}?*+@!]+|""" + _EXTGLOB + rb"""|[?*+@!]
                                |\$(?![('{"]))*)+""", re.X)
# After a command's first word: its arguments if they come next, else the next command
# token (one regex call: the second alternative is _SH_COMMAND itself).
_SH_ARGUMENTS_OR_COMMAND = re.compile(rb"(?P<args>" + _SH_ARGUMENTS.pattern + rb")|"
                                      + _SH_COMMAND.pattern, re.S | re.X)
_SH_WORD_STATES = frozenset((b"case-head", b"case-pattern", b"case-word", b"for"))
# Inside "...": only expansions open anything; text, escapes and a `$` that opens
# nothing are one token.
_SH_DOUBLE = re.compile(rb"""(?:[^"\\$`]+|\\.?|\$(?![({]))+|\$\(\(|\$\(|\$\{|[`"]""", re.S)
# Inside ${...} (`#` and `%` are operators there) and $((...)) (`<<` is a shift): no
# comment, no heredoc; brackets count in $((...)), only the closing brace in ${...}.
_SH_EXPANSION = re.compile(rb"""[^"'\\$`()\[\]{}]+|\\.?|'[^']*'?|\$\(\(|\$\(|\$\{|\$
                               |[`"()\[\]{}]""", re.S | re.X)
_SH_PLAIN_IN_PARAMETER = frozenset((b"{", b"[", b"]", b"(", b")"))
_SH_DOUBLE_ACTIVE = frozenset((b'"', b"$(", b"${", b"$((", b"`"))
# A Python script started by a shell line (pip's `'''exec' python "$0" "$@"`): bash
# never reads past that line, so what follows is not shell.
_SH_EXEC_POLYGLOT = re.compile(rb"[ \t]*(?:'')*'exec'[ \t]")
_SH_SKIPPED = frozenset(("esc", "comment", "redir", "end", "other"))
_SH_KEYWORDS = frozenset(b"if fi case esac for select while until do done".split())
# Words after which the next word is a command again (so `if`, `done` are keywords).
# After `fi`, `done` and `esac` too: bash reads `esac done` and `fi fi`.
_SH_NEXT_IS_COMMAND = frozenset(b"if then elif else do while until ! time fi done esac"
                                .split())
_SH_OPENS_FRAME = {b"$(": b"(", b"(": b"(", b"<(": b"(", b">(": b"(", b"$((": b"((",
                   b"${": b"${", b"{": b"{", b"[": b"["}
_SH_OPENER_OF = {b")": b"(", b"]": b"[", b"}": b"{"}
_SH_SEPARATORS = frozenset((b";", b"&", b"&&", b"||", b"|", b"|&"))
_SH_CASE_PATTERN = frozenset((b"case-pattern", b"case-word"))
_SH_CASE_STATES = frozenset((b"case-head", b"case-pattern", b"case-word"))
_SH_TEXT_STATES = frozenset((b'"', b"${", b"(("))  # lexed by _SH_DOUBLE / _SH_EXPANSION


_ARITHMETIC_END = re.compile(rb"[();]")


def _arithmetic(data: bytes, pos: int) -> bool:
    """Is the `$((` just before `pos` arithmetic? Bash reads `$((a; b) | c)` as a
    command substitution holding a subshell: arithmetic holds no `;`, and its first
    `)` at depth 0 is followed by another."""
    depth = 0
    for found in _ARITHMETIC_END.finditer(data, pos, min(len(data), pos + 4096)):
        byte = found.group()
        if byte == b";" and depth == 0:
            return False
        if byte == b"(":
            depth += 1
        elif byte == b")":
            if depth == 0:
                return data[found.end():found.end() + 1] == b")"
            depth -= 1
    return True


def _heredoc_end(data: bytes, pos: int, delimiter: bytes, dash: bool,
                 in_backquotes: bool = False) -> int:
    """Where the line after the heredoc's terminator starts; -1 if none terminates it.

    In a backquoted substitution the terminator may be followed by the closing
    backquote (a line `END` + backquote + `"`, as bash reads it): lexing goes on
    at that backquote."""
    tail = rb"(?=`)|" if in_backquotes else b""
    terminator = re.compile(rb"^" + (rb"\t*" if dash else b"") + re.escape(delimiter)
                            + rb"(?:" + tail + rb"\r?$)", re.M)
    found = terminator.search(data, pos)
    if found is None:
        return -1
    return found.end() if data[found.end():found.end() + 1] == b"`" else found.end() + 1


def shell_imbalance(data: bytes) -> int:
    """Openers left unclosed and closers closing nothing in a shell script.

    Frames on the stack: `if`, `loop` (while/until before `do`), `for` (for/select
    before `do`: `for x do` needs no separator), `do`, `case-head` (before `in`),
    `case-pattern` / `case-word` (a pattern list, before its `)`: patterns end with a
    `)` that opens nothing and cannot span lines), `case-command`, and the brackets
    and quotes by their opening text. Keywords count at a command's first word only.
    """
    stack: list[bytes] = []
    bad = 0
    pos, end = 0, len(data)
    command = True  # is the next word a command's first word?
    heredocs: list[tuple[bytes, bool]] = []  # opened on this line, bodies start after it
    polyglot = b"'exec'" in data  # else _SH_EXEC_POLYGLOT cannot match anywhere
    while pos < end:
        top = stack[-1] if stack else b""
        if top in _SH_TEXT_STATES:
            m = (_SH_DOUBLE if top == b'"' else _SH_EXPANSION).match(data, pos)
            assert m is not None  # either pattern matches any byte
            tok = m.group()
            pos = m.end()
            if top == b'"' and tok not in _SH_DOUBLE_ACTIVE:
                continue  # text: a lone `)` in a string closes nothing
            if tok == b'"':
                if top == b'"':
                    stack.pop()
                else:
                    stack.append(b'"')
            elif top == b"${" and tok in _SH_PLAIN_IN_PARAMETER:
                continue  # bash pairs only the braces: `${a/#/${p}[}`, `${a:-{}`
            elif tok == b"$((" and not _arithmetic(data, pos):
                stack += [b"(", b"("]  # `$( (a; b) | c )`: a subshell in a substitution
                command = True
            elif tok in _SH_OPENS_FRAME:
                stack.append(_SH_OPENS_FRAME[tok])
                command = tok == b"$("
            elif tok == b"`":
                stack.append(b"`")
                command = True
            elif tok in _SH_OPENER_OF:
                if top == _SH_OPENER_OF[tok] or (tok == b"}" and top == b"${"):
                    stack.pop()
                elif tok == b")" and top == b"((" and data[pos:pos + 1] == b")":
                    stack.pop()
                    pos += 1
                else:
                    bad += 1
            elif top != b'"' and tok[:1] == b"'" and (len(tok) == 1 or tok[-1:] != b"'"):
                bad += 1  # a quote in ${...} or $((...)) left open at the end
            continue
        if polyglot and command and not stack and _SH_EXEC_POLYGLOT.match(data, pos):
            break
        if not command and top not in _SH_WORD_STATES:
            m = _SH_ARGUMENTS_OR_COMMAND.match(data, pos)
        else:
            m = _SH_COMMAND.match(data, pos)
        assert m is not None and m.lastgroup is not None  # `end` or `other` always matches
        kind = m.lastgroup
        pos = m.end()
        if kind in _SH_SKIPPED or kind == "args":
            continue
        tok = m.group(kind)
        if kind == "sq" or kind == "ansi":
            opening = 1 if kind == "sq" else 2  # `'` or `$'`
            bad += len(tok) == opening or tok[-1:] != b"'"  # unterminated at the end
            command = False
        elif kind == "nl":
            command = True
            bad += top == b"case-word"
            if heredocs:
                pos = m.start(kind) + 1  # the body starts right after the newline
                for delimiter, dash in heredocs:
                    pos = _heredoc_end(data, pos, delimiter, dash, b"`" in stack)
                    if pos < 0:
                        bad += 1
                        pos = end
                        break
                heredocs.clear()
        elif kind == "here":
            if tok != b"<<<":
                heredocs.append((m.group("q1") or m.group("q2") or m.group("bare") or b"",
                                 m.group("dash") == b"-"))
        elif kind == "word":
            if top in _SH_CASE_STATES or tok in _SH_KEYWORDS:
                command, bad = _shell_word(tok, stack, top, command, bad)
            else:  # a plain word (most of them): only the `command` flag changes
                command = command and tok in _SH_NEXT_IS_COMMAND
        elif tok == b'"':  # a string opens wherever it stands (_shell_operator's rule)
            stack.append(b'"')
            command = False
        else:
            if tok == b"$((" and not _arithmetic(data, pos):
                stack += [b"(", b"("]
                command = True
                continue
            if tok == b"{" and top == b"for":  # `for ((...)) {`: a command follows `))`
                command = command or data[max(0, m.start() - 64):m.start()].rstrip(
                    b" \t").endswith(b"))")
            command, bad = _shell_operator(tok, stack, top, command, bad)
    return bad + len(stack) + len(heredocs)


def _shell_word(tok: bytes, stack: list[bytes], top: bytes, command: bool,
                bad: int) -> tuple[bool, int]:
    """Apply one word; the new `command` flag and count of unmatched closers."""
    if top == b"case-head":
        if tok == b"in":
            stack[-1] = b"case-pattern"
        return False, bad
    if top == b"case-pattern":
        if tok == b"esac":
            stack.pop()
            return True, bad  # `esac done`: a keyword may follow
        else:
            stack[-1] = b"case-word"
        return False, bad
    if top == b"case-word":
        return False, bad
    if top == b"for" and tok == b"do":
        stack[-1] = b"do"
        return True, bad
    if not command:
        return False, bad
    if tok not in _SH_KEYWORDS:
        return tok in _SH_NEXT_IS_COMMAND, bad
    if tok == b"if":
        stack.append(b"if")
    elif tok in (b"for", b"select"):
        stack.append(b"for")
    elif tok in (b"while", b"until"):
        stack.append(b"loop")
    elif tok == b"case":
        stack.append(b"case-head")
    elif tok == b"do":
        if top == b"loop" or top == b"for":
            stack[-1] = b"do"
        else:
            bad += 1
            stack.append(b"do")
    else:  # fi, done, esac
        wanted = {b"fi": b"if", b"done": b"do", b"esac": b"case-command"}[tok]
        if top == wanted:
            stack.pop()
        else:
            bad += 1
    return tok in _SH_NEXT_IS_COMMAND, bad


def _shell_operator(tok: bytes, stack: list[bytes], top: bytes, command: bool,
                    bad: int) -> tuple[bool, int]:
    """Apply one operator (or bracket, quote); the new `command` flag and count."""
    if tok in (b";;", b";&", b";;&"):
        if top == b"case-command":
            stack[-1] = b"case-pattern"
        elif top != b"case-pattern":
            bad += 1
        return True, bad
    if top in _SH_CASE_PATTERN:
        if tok == b")":
            stack[-1] = b"case-command"
            return True, bad
        if tok == b"(" or tok == b"|":
            return False, bad
        if tok == b"[" or tok == b"]":  # a glob's bracket, or a lone `[` (`nfs:*[*)`)
            return False, bad
    if tok in _SH_SEPARATORS:
        return True, bad
    if tok == b"{" and top == b"for" and command:  # `for ((i=0; i<n; i++)) { ...; }`:
        stack[-1] = b"{"  # bash's brace body in place of do ... done
        return True, bad
    if tok in _SH_OPENS_FRAME:
        stack.append(_SH_OPENS_FRAME[tok])
        return tok[-1:] in b"({", bad
    if tok == b'"':
        stack.append(b'"')
        return False, bad
    if tok == b"`":
        if top == b"`":
            stack.pop()
            return False, bad
        stack.append(b"`")
        return True, bad
    # ), ], }
    if top == _SH_OPENER_OF[tok]:
        stack.pop()
    else:
        bad += 1
    return tok == b"}", bad  # a group's `}` ends a command: `} else {`, `} fi`
