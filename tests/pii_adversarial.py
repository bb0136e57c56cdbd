"""Adversarial inputs for PII redaction: each a unit repeated to any size. Shared by
tests/test_pii_secrets.py (work bounded, linear) and tests/bench/bench_pii_adversarial.py
(CPU seconds per MB)."""

from __future__ import annotations

import base64

from tests.realdata import STDLIB


def _real_base64() -> str:
    """A base64 blob of a real file, in 76-character lines (as MIME and PEM write it)."""
    blob = base64.b64encode((STDLIB / "json" / "encoder.py").read_bytes()).decode()
    return "\n".join(blob[i:i + 76] for i in range(0, len(blob), 76)) + "\n"


def _real_line() -> str:
    """A real source line with a keyword, for a document of nothing but that line."""
    for line in (STDLIB / "getpass.py").read_text().splitlines():
        if "password" in line.lower() and "=" in line:
            return line + "\n"
    raise LookupError("getpass.py has no password line")


UNITS: dict[str, str] = {
    "BEGIN lines": "-----BEGIN PRIVATE KEY-----\n",
    "BEGIN on one line": "-----BEGIN PRIVATE KEY-----",
    "PuTTY headers": "PuTTY-User-Key-File-2: ssh-rsa\n",
    "password=": "password=",
    "keyword words": "pwd" * 50 + "=",  # one long word of keywords, then `=`
    "keyword word run": "secret" * 100 + ' = "x',
    "api_key quote": 'api_key = "',
    "YAML keys": "password: ,",
    "long quoted strings": '"' + "a1" * 200 + '" ',
    "unclosed quotes": "password = \"" + "ab1 " * 100,
    "base64 blob": _real_base64(),
    "e-mail-like": "a.b@c.",
    "at signs": "@",
    "local parts": "a" * 70 + "@",
    "dotted numbers": "1.1.",
    "colons": "1234567890:",
    "hex colons": "a:",
    "AWS prefixes": "AKIA",
    "Basic headers": "Authorization: Basic ",
    "JWT starts": "eyJ",
    "JWT dots": "eyJabcdefgh.",
    "npmrc slashes": "//a",
    "npmrc lines": "//a/:_authToken=",
    "URL credentials": "x://a:b@",
    # a key name, 400 spaces and no separator, then a value of the right shape: the
    # patterns' `(?: *)(?:=|:| +|...)(?: *)` fails three ways per space
    "Cloudant spaces": "cl_key" + " " * 400 + "x " + "0123456789abcdef" * 4 + "\n",
    "IBM spaces": "secret_key" + " " * 400 + "x " + "0123456789abcdef" * 3 + "\n",
    "Discord dots": "M.abcdef.",
    "Telegram colons": "12345678:" + "a" * 35,
    "Twilio prefixes": "AC",
    "Mailchimp": "a" * 32 + "-us",
    "connection strings": ";Password=",
    "a real keyword line": _real_line(),
}


def text(name: str, size: int) -> str:
    unit = UNITS[name]
    return (unit * (size // len(unit) + 1))[:size]
