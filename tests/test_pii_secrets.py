"""Secrets of the classes detect-secrets 1.5.0 and gitleaks 8.x name, planted in real-form
config and code inside real stdlib files, and in every published column; redaction work
bounded by the characters the regexes are given (linear), not by a clock."""

from __future__ import annotations

import base64
import random
import string
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from lemur_data.filters.pii import windows
from lemur_data.filters.pii.find import find_pii
from lemur_data.filters.pii.keyword_rule import KEYWORD_RULE
from lemur_data.filters.pii.redact import redact
from lemur_data.filters.pii.secret_rules import placeholder
from lemur_data.filters.pii.secrets import find_secrets
from lemur_data.stages.base import ShardContext
from lemur_data.stages.pii import Pii, PiiParams
from lemur_data.stages.storage import DOCUMENT_SCHEMA
from tests import pii_adversarial as adversarial
from tests.fixtures import fixture
from tests.realdata import STDLIB

ALNUM = string.ascii_letters + string.digits


def _random(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def planted(rng: random.Random) -> dict[str, tuple[str, str, str]]:
    """class -> (file name, file text with the secret, the secret)."""
    hexl = "0123456789abcdef"
    gitlab = "glpat-" + _random(rng, ALNUM + "_-", 20)
    npmrc = "npm_" + _random(rng, ALNUM, 36)
    npm_code = "npm_" + _random(rng, ALNUM, 36)
    pypi = "pypi-AgEIcHlwaS5vcmc" + _random(rng, ALNUM + "_-", 120)
    twilio_sid = "AC" + _random(rng, hexl, 32)
    twilio_key = "SK" + _random(rng, hexl, 32)
    mailgun = "key-" + _random(rng, hexl, 32)
    discord = ("M" + _random(rng, ALNUM, 23) + "." + _random(rng, ALNUM, 6) + "."
               + _random(rng, ALNUM + "_-", 27))
    telegram = f"{rng.randint(10**8, 10**9 - 1)}:AA" + _random(rng, ALNUM + "_-", 33)
    putty_body = "\n".join(_random(rng, ALNUM + "+/", 64) for _ in range(4))
    putty = ("PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nComment: deploy@ci\n"
             f"Public-Lines: 2\n{_random(rng, ALNUM, 64)}\n{_random(rng, ALNUM, 40)}\n"
             f"Private-Lines: 4\n{putty_body}\nPrivate-MAC: {_random(rng, hexl, 40)}")
    basic = base64.b64encode(f"deploy:{_random(rng, ALNUM, 12)}".encode()).decode()
    django = "django-insecure-" + _random(rng, string.ascii_lowercase + string.digits
                                          + "!@#%^&*(-_=+)", 50)
    env_pw, yaml_pw, ado_pw, jdbc_pw = "hunter2!", "p@ss!w0rd", "Pa$$w0rd!9", "s3cr!t#1"
    return {
        "GitLabTokenDetector": ("ci.py", f'GITLAB_TOKEN = "{gitlab}"\n', gitlab),
        "NpmDetector": (".npmrc", f"//registry.npmjs.org/:_authToken={npmrc}\n", npmrc),
        "gitleaks:npm-access-token": ("publish.js", f"const token = '{npm_code}';\n",
                                      npm_code),
        "PypiTokenDetector": ("upload.py", f'TWINE_PASSWORD = "{pypi}"\n', pypi),
        "TwilioKeyDetector (SID)": ("sms.py", f'client = Client("{twilio_sid}", auth)\n',
                                    twilio_sid),
        "TwilioKeyDetector (API key)": ("sms.js", f"const apiKey = '{twilio_key}';\n",
                                        twilio_key),
        "gitleaks:mailgun-private-api-token": ("mail.py", f'MAILGUN = "{mailgun}"\n',
                                               mailgun),
        "DiscordBotTokenDetector": ("bot.py", f'bot.run("{discord}")\n', discord),
        "TelegramBotTokenDetector": ("tg.py", f'updater = Updater("{telegram}")\n', telegram),
        "PrivateKeyDetector (PuTTY)": ("deploy.ppk", putty + "\n", putty),
        "lemur:basic_auth_header": ("fetch.sh",
                                    f"curl -H 'Authorization: Basic {basic}' https://x.io\n",
                                    basic),
        "KeywordDetector (Django SECRET_KEY)": ("settings.py", f"SECRET_KEY = '{django}'\n",
                                                django),
        "KeywordDetector (.env)": (".env", f'DB_PASSWORD="{env_pw}"\n', env_pw),
        "KeywordDetector (YAML)": ("config.yaml", f'db:\n  password: "{yaml_pw}"\n', yaml_pw),
        "lemur:connection_string_password (ADO.NET)": (
            "Db.cs", f'var cs = "Server=db;Database=app;User Id=sa;Password={ado_pw};";\n',
            ado_pw),
        "lemur:connection_string_password (JDBC)": (
            "Db.java", f'String url = "jdbc:postgresql://db:5432/app?user=app&password='
            f'{jdbc_pw}";\n', jdbc_pw),
    }


HOST = "json/encoder.py"  # a real file the secrets are planted into


def test_every_planted_class_is_redacted_in_a_real_file() -> None:
    host = (STDLIB / HOST).read_text()
    assert find_pii(host) == []
    missed: Counter[str] = Counter()
    for seed in range(20):  # 20 random secrets of each class
        for name, (file, snippet, secret) in planted(random.Random(seed)).items():
            text = host[:2000] + "\n" + snippet + host[2000:]
            out = redact(text, find_pii(text, path=file))
            # nor any line of it, nor its last 12 characters (GitLab's pattern groups
            # only `glpat`: redacting the group alone left the token's body)
            if secret in out or secret[-12:] in out or any(
                    part in out for part in secret.split("\n") if len(part) > 12):
                missed[name] += 1
            assert host[:1000] in out and host[-1000:] in out  # nothing else is touched
    assert not missed, f"missed (of 20 each): {dict(missed)}"


def test_secrets_in_every_published_column_are_redacted() -> None:
    rng = random.Random(3)
    token = "ghp_" + _random(rng, ALNUM, 36)
    rows = [{"id": "a", "text": "x = 1\n", "source": "s", "kind": "code", "lang": "Python",
             "path": "home/jane.doe@corp-mail.com/x.py", "repo": "jane.doe@corp-mail.com/tools",
             "license": "MIT", "stars": 3,
             "url": f"https://{token}@github.com/jane/tools.git"}]
    table = pa.Table.from_pylist(rows, schema=DOCUMENT_SCHEMA)
    out = Pii(PiiParams()).apply(table, ShardContext("0", "", 0)).table
    published = out.to_pylist()[0]
    assert token not in str(published) and "jane.doe@corp-mail.com" not in str(published)
    assert published["url"] == "https://<KEY>@github.com/jane/tools.git"
    assert published["path"] == "home/<EMAIL>/x.py" and published["repo"] == "<EMAIL>/tools"
    assert published["pii_emails"] == 2 and published["pii_keys"] == 1


@pytest.mark.parametrize("name", sorted(adversarial.UNITS))
def test_redaction_work_is_linear_on_adversarial_input(name: str) -> None:
    """`work` holds the length of every slice a regex is given (and each whole-text pass):
    doubling the input doubles it, and it stays within a constant per character."""
    works = {}
    for size in (50_000, 100_000, 200_000):
        text = adversarial.text(name, size)
        work: list[int] = []
        spans = find_pii(text, work=work)
        assert max(work) <= size  # no slice is longer than the text
        works[size] = sum(work)
        if name.startswith("BEGIN"):  # every BEGIN is an unterminated key, found in one pass
            assert (redact(text, spans).count("<PRIVATE_KEY>")
                    == text.count("-----BEGIN PRIVATE KEY-----"))
    assert works[200_000] <= 2.05 * works[100_000] <= 4.2 * works[50_000], works
    assert works[200_000] <= WORK_PER_CHARACTER * 200_000, works


# The widest slices per hit: KeywordDetector's 4-5 patterns over a word and REACH after it,
# an `@`'s 64 + 255 characters; measured at most 336 on the forms above.
WORK_PER_CHARACTER = 400


def test_work_grows_linearly_with_size() -> None:
    sizes = {}
    for n in (100_000, 400_000):
        text = ("password = 'x'; //a AKIA -----BEGIN PRIVATE KEY-----\n" * n)[:n]
        work: list[int] = []
        find_pii(text, work=work)
        sizes[n] = sum(work)
    assert sizes[400_000] <= 4.1 * sizes[100_000]


def test_spaced_separators_keep_their_match() -> None:
    """Cloudant / IBM / SoftLayer patterns run with runs of spaces shortened (their
    separators are cubic in them): a key written with wide separators is still found."""
    rng = random.Random(5)
    host = (STDLIB / HOST).read_text()
    hex64, hex48 = _random(rng, "0123456789abcdef", 64), _random(rng, "0123456789abcdef", 48)
    for line, secret, rule in [
            (f'cloudant_key      =      "{hex64}"', hex64, "CloudantDetector"),
            (f"cos_hmac_secret_access_key   :   '{hex48}'", hex48, "IbmCosHmacDetector")]:
        text = host[:2000] + "\n" + line + "\n" + host[2000:]
        found = {(f.rule, text[f.start:f.end]) for f in find_secrets(text, "settings.py")}
        assert (rule, secret) in found, (line, found)


def test_placeholders_and_code_stay(tmp_path: Path) -> None:
    kept = ['password = os.environ["DB_PASSWORD"]\n', 'password: "${DB_PASSWORD}"\n',
            'DB_PASSWORD="changeme"\n', "secret_key = get_secret()\n",
            'conn = "Server=db;Password={password};"\n', "password=None, query=None\n"]
    for line, file in zip(kept, ["a.py", "c.yaml", ".env", "a.py", "a.cs", "a.py"],
                          strict=True):
        assert find_pii(line, path=file) == [], line


def test_lowered_text_keeps_every_position() -> None:
    """The prefilter runs on the lowered text and its positions are used on the text: the
    characters whose lowercase is longer are all known (U+0130 only)."""
    longer = {chr(c) for c in range(0x110000) if len(chr(c).lower()) != 1}
    assert longer == set(windows.LONGER_LOWER)
    text = "İstanbul: password = \"hunter2!x\"\n"
    assert windows.lower(text) == "istanbul: password = \"hunter2!x\"\n"
    assert [text[f.start:f.end] for f in find_secrets(text, "a.py")] == ["hunter2!x"]


# Real files where detect-secrets' own KeywordDetector finds values (`password = "..."` in
# urllib, smtplib, ssl, zipfile tests ...), and one of each of its file types, planted.
KEYWORD_FILES = ["test/test_urllib2_localnet.py", "test/test_urllib2.py", "test/test_zipfile.py",
                 "test/test_ssl.py", "test/test_imaplib.py", "test/test_netrc.py",
                 "test/test_nntplib.py", "test/test_smtplib.py", "test/test_urllib2net.py",
                 "urllib/request.py"]
KEYWORD_FORMS = {"settings.go": 'password := "g0-s3cret"\n', "Db.cs": 'string pwd = "cs-s3cret";\n',
                 "App.java": 'if ("j-s3cret" == password) {}\n',
                 "app.js": "const api_key = 'js-s3cret';\n",
                 "Keys.m": 'NSString *password = @"m-s3cret";\n',
                 "db.cpp": 'password.assign("cpp-s3cret");\n', "app.ini": "db_pass = ini-s3cret\n",
                 "ci.yaml": "  secret: yaml-s3cret\n", ".env": 'DB_PASSWORD="env-s3cret"\n'}


def test_keyword_windows_find_what_detect_secrets_finds_line_by_line() -> None:
    """The prefilter (keywords tried at the first keyword of a word, in bounded windows)
    loses nothing detect-secrets' KeywordDetector finds reading each line whole."""
    from detect_secrets.filters import heuristic
    from detect_secrets.plugins.keyword import KeywordDetector

    detector = KeywordDetector()
    # Debian's Python 3.11 standard library and its test package (fixtures): the running
    # Python may lack test/ (Debian's python3 does), and its version changes the files.
    lib = {"test": fixture("libpython3.11-testsuite") / "usr/lib/python3.11",
           "urllib": fixture("libpython3.11-minimal") / "usr/lib/python3.11"}
    documents = [(name, (lib[name.split("/")[0]] / name).read_text()) for name in KEYWORD_FILES]
    host = (STDLIB / HOST).read_text()
    documents += [(name, host[:3000] + "\n" + line + host[3000:])
                  for name, line in KEYWORD_FORMS.items()]
    compared = 0
    for name, text in documents:
        ours = {text[f.start:f.end] for f in find_secrets(text, name)
                if f.rule == KEYWORD_RULE}
        for line in text.splitlines():
            for found in detector.analyze_line(filename=name, line=line, line_number=0):
                value = found.secret_value
                if (not value or placeholder(value)
                        or heuristic.is_sequential_string(value)
                        or heuristic.is_indirect_reference(line)):
                    continue  # the heuristics both apply
                compared += 1
                assert value in ours, (name, line)
    assert compared >= 20, compared
