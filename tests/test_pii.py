"""PII redaction on real files with planted secrets: every planted secret is replaced by its
placeholder, nothing else changes (byte for byte), and Python that parsed still parses."""

from __future__ import annotations

import ast
import base64
import json
import random
import re
import string
import sysconfig
from pathlib import Path

import pyarrow as pa
import pytest

from lemur_data.filters.pii.find import find_pii
from lemur_data.filters.pii.redact import PLACEHOLDERS, redact
from lemur_data.stages.base import ShardContext
from lemur_data.stages.pii import Pii, PiiParams
from lemur_data.stages.storage import documents_table
from tests.fixtures import fixture

STDLIB = Path(sysconfig.get_paths()["stdlib"])
HOSTS = ["dataclasses.py", "configparser.py", "shlex.py", "fnmatch.py", "heapq.py",
         "json/encoder.py", "logging/config.py", "csv.py", "glob.py", "bisect.py"]


def _chars(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _secrets(rng: random.Random) -> dict[str, tuple[str, str]]:
    """name -> (secret, kind), freshly generated in each real format."""
    upper, alnum = string.ascii_uppercase + string.digits, string.ascii_letters + string.digits
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = _b64url(json.dumps({"sub": str(rng.randint(10**6, 10**7)), "name": "Ann Lee",
                                  "iat": rng.randint(1_600_000_000, 1_700_000_000)}).encode())
    key_body = base64.b64encode(rng.randbytes(600)).decode()
    pem = ("-----BEGIN RSA PRIVATE KEY-----\n"
           + "\n".join(key_body[i:i + 64] for i in range(0, len(key_body), 64))
           + "\n-----END RSA PRIVATE KEY-----")
    return {
        "AWS_ACCESS_KEY_ID": ("AKIA" + _chars(rng, upper, 16), "key"),
        "AWS_SECRET_ACCESS_KEY": (_chars(rng, alnum + "/+", 40), "key"),
        "GITHUB_TOKEN": ("ghp_" + _chars(rng, alnum, 36), "key"),
        "SLACK_BOT_TOKEN": (f"xoxb-{rng.randint(10**11, 10**12)}-"
                            f"{rng.randint(10**11, 10**12)}-{_chars(rng, alnum, 24)}", "key"),
        "STRIPE_KEY": ("sk_live_" + _chars(rng, alnum, 24), "key"),
        "GCP_API_KEY": ("AIza" + _chars(rng, alnum + "-_", 35), "key"),
        "SESSION_JWT": (f"{header}.{payload}.{_b64url(rng.randbytes(32))}", "key"),
        "AZURE_CONN": ("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey="
                       + base64.b64encode(rng.randbytes(64)).decode(), "key"),
        "ADMIN_EMAIL": ("jane.o-neil+ops@acme-widgets.co.uk", "email"),
        "SERVER_IP": (f"{rng.randint(11, 99)}.{rng.randint(10, 250)}.{rng.randint(10, 250)}."
                      f"{rng.randint(10, 250)}", "ip_address"),
        "MIRROR_IPV6": ("2606:4700:4700::1111", "ip_address"),
        "DEPLOY_KEY": (pem, "private_key"),
    }


def _config_block(secrets: dict[str, tuple[str, str]], redacted: bool) -> str:
    """A settings block as real code writes it; placeholders instead of secrets if asked."""
    lines = ["# Deployment settings (loaded by the service at start-up).\n"]
    for name, (secret, kind) in secrets.items():
        value = PLACEHOLDERS[kind] if redacted else secret
        if name == "AZURE_CONN":
            prefix = secret.split("AccountKey=")[0] + "AccountKey="
            value = prefix + (PLACEHOLDERS[kind] if redacted else secret.split("AccountKey=")[1])
        quote = '"""' if "\n" in secret else '"'
        lines.append(f"{name} = {quote}{value}{quote}\n")
    # Private ranges and documentation addresses stay as they are.
    lines.append('INTERNAL_HOSTS = ["10.0.3.17", "192.168.10.5", "172.20.0.9", "127.0.0.1", '
                 '"192.0.2.44", "198.51.100.7", "203.0.113.250", "::1"]\n')
    lines.append('SUPPORT_EMAIL = "help@example.com"  # a reserved example domain\n')
    return "".join(lines) + "\n\n"


def _insert(host: str, block: str, at_line: int) -> str:
    lines = host.splitlines(keepends=True)
    return "".join(lines[:at_line]) + block + "".join(lines[at_line:])


def test_planted_secrets_in_real_python_files() -> None:
    rng = random.Random(11)
    for name in HOSTS:
        original = (STDLIB / name).read_text()
        assert find_pii(original) == [], f"{name} must start clean to compare byte for byte"
        lines = original.splitlines(keepends=True)
        slots = [i for i, line in enumerate(lines) if re.match(r"(def|class) ", line)]
        at = rng.choice(slots)
        secrets = _secrets(rng)
        planted = _insert(original, _config_block(secrets, False), at)
        expected = _insert(original, _config_block(secrets, True), at)
        ast.parse(planted)
        redacted = redact(planted, find_pii(planted))
        assert redacted == expected, name
        ast.parse(redacted)
        for secret, _kind in secrets.values():
            core = secret.split("AccountKey=")[-1]
            assert core not in redacted


def _sentence_slots(text: str) -> list[int]:
    return [m.end() for m in re.finditer(r"\. (?=[A-Z])", text)]


def test_planted_contacts_in_real_prose() -> None:
    from pydoc_data.topics import topics

    rng = random.Random(12)
    for name in sorted(topics)[:40]:
        original = topics[name]
        if find_pii(original) or not _sentence_slots(original):
            continue
        ip = f"{rng.randint(11, 99)}.{rng.randint(10, 250)}.{rng.randint(10, 250)}.7"
        email = f"{rng.choice(['maria', 'j.doe', 'k_tanaka'])}@univ-{rng.randint(1, 99)}.edu"
        sentence = ("Questions go to {email} (the mirror at {ip}, or [2a00:1450:4001::200e]; "
                    "staging runs on 192.168.4.20 and 10.1.2.3). ")
        at = rng.choice(_sentence_slots(original))
        planted = original[:at] + sentence.format(email=email, ip=ip) + original[at:]
        expected = original[:at] + sentence.format(
            email="<EMAIL>", ip="<IP_ADDRESS>").replace("2a00:1450:4001::200e",
                                                        "<IP_ADDRESS>") + original[at:]
        assert redact(planted, find_pii(planted)) == expected, name


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::SyntaxWarning", "ignore::DeprecationWarning")
def test_redacted_real_python_still_parses() -> None:
    """Real files with real findings (author emails, example keys): still valid Python."""
    purelib = Path(sysconfig.get_paths()["purelib"])
    candidates = sorted(STDLIB.rglob("*.py"))[::3] + sorted(purelib.rglob("*.py"))[::25]
    changed = 0
    for path in candidates:
        text = path.read_text(errors="replace")
        spans = find_pii(text)
        if not spans:
            continue
        try:
            ast.parse(text)
        except SyntaxError:
            continue
        changed += 1
        ast.parse(redact(text, spans), filename=str(path))
    assert changed >= 50


def test_stage_rewrites_text_and_counts_per_kind() -> None:
    rng = random.Random(13)
    secrets = _secrets(rng)
    host = (STDLIB / "dataclasses.py").read_text()
    docs = documents_table([
        {"id": "a", "text": _insert(host, _config_block(secrets, False), 0), "source": "s",
         "kind": "code"},
        {"id": "b", "text": host, "source": "s", "kind": "code"},
    ])
    stage = Pii(PiiParams())
    result = stage.apply(docs, ShardContext("0", "", 0))
    assert result.reasons.null_count == 2
    table = result.table
    assert table.column("text")[0].as_py() == _insert(host, _config_block(secrets, True), 0)
    assert table.column("text")[1].as_py() == host
    assert table.column("pii_keys").to_pylist() == [8, 0]
    assert table.column("pii_emails").to_pylist() == [1, 0]
    assert table.column("pii_ip_addresses").to_pylist() == [2, 0]
    assert table.column("pii_private_keys").to_pylist() == [1, 0]
    assert [f.name for f in stage.added_columns()] == [
        "pii_emails", "pii_ip_addresses", "pii_keys", "pii_private_keys"]
    assert table.schema.field("text").type == pa.large_string()
    off = Pii(PiiParams(keys=False)).apply(docs, ShardContext("0", "", 0)).table
    assert secrets["GITHUB_TOKEN"][0] in off.column("text")[0].as_py()


_LAZY_RULES_PROBE = """
import sys
from pathlib import Path
from lemur_data.stages.base import ShardContext
from lemur_data.stages.pii import Pii, PiiParams
from lemur_data.stages.storage import documents_table
RULES = ("detect_secrets", "ahocorasick", "lemur_data.filters.pii.find")
text = Path(sys.argv[1]).read_text()
kept = {"text": "<EMAIL> " + text + " <KEY>", "pii_emails": 1, "pii_keys": 1}
hooks = [len(Pii.locate(kept, {})), Pii.explain(kept, {}, None)]  # workbench's hooks
print(hooks, [m for m in RULES if m in sys.modules])
docs = documents_table([{"id": "a", "text": text + " ops@corp-mail.io", "source": "s",
                         "kind": "code"}])
Pii(PiiParams()).apply(docs, ShardContext("0", "", 0))
print([m for m in RULES if m in sys.modules])
"""


def test_the_stage_module_loads_the_rules_only_to_redact() -> None:
    """Importing the stage and its workbench hooks (`locate`, `explain`: what `inspect`,
    `explain` and a build's driver use) loads neither detect-secrets nor the compiled
    rules; `apply` does."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _LAZY_RULES_PROBE,
                          str(STDLIB / "dataclasses.py")],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0] == "[2, ['redacted 1 email, 1 key']] []", out
    assert out[1] == "['detect_secrets', 'ahocorasick', 'lemur_data.filters.pii.find']", out


def test_build_reports_redaction_totals(ray_session, tmp_path: Path) -> None:
    """stats.json sums the per-document counts, and the card shows them."""
    from tests.runs import run_build

    rng = random.Random(5)
    root = tmp_path / "tree"
    planted = 0
    for n, host in enumerate(HOSTS):
        target = root / "repo" / host
        target.parent.mkdir(parents=True, exist_ok=True)
        text = (STDLIB / host).read_text()
        if n % 2 == 0:  # half the files carry a settings block with 8 keys
            text = _insert(text, _config_block(_secrets(rng), False), 0)
            planted += 1
        target.write_text(text)
    manifest = {"name": "pii-totals", "shard": {"max_docs": 3},
                "sources": [{"name": "tree", "kind": "code",
                             "reader": {"type": "tree", "root": str(root)}}],
                "stages": [{"pii": {}}]}
    run = tmp_path / "run"
    run_build(manifest, tmp_path, run)
    stats = json.loads((run / "stats.json").read_text())
    pii = next(s for s in stats["stages"] if s["name"] == "pii")
    import pyarrow.parquet as pq

    out = pq.read_table(run / stats["output"]["dir"])
    for column in ("pii_emails", "pii_ip_addresses", "pii_keys", "pii_private_keys"):
        assert pii["totals"][column] == sum(out.column(column).to_pylist())
    assert pii["totals"]["pii_keys"] >= 8 * planted
    assert pii["totals"]["pii_private_keys"] >= planted
    card = (run / "README.md").read_text()
    assert f"totals.pii_keys | {pii['totals']['pii_keys']}" in card


def _real_private_key(name: str) -> str:
    """A private key block the stdlib's own tests ship (text before it dropped)."""
    # the test package: Debian's python3 has none, so it comes from the fixture
    text = (fixture("libpython3.11-testsuite") / "usr/lib/python3.11/test" / name).read_text()
    start = text.index("-----BEGIN")
    end = text.index("-----END", start)
    return text[start:text.index("\n", end) + 1 if "\n" in text[end:] else len(text)]


def test_passwords_in_connection_strings_in_real_files() -> None:
    """URL passwords are keys (also for a dotted host, where `pass@host` looked like an
    e-mail and was counted as one); template values and URLs without one stay."""
    rng = random.Random(21)
    alnum = string.ascii_letters + string.digits
    for name in HOSTS:
        original = (STDLIB / name).read_text()
        passwords = [_chars(rng, alnum, 16), "pw", _chars(rng, alnum, 8) + "@!x",
                     _chars(rng, alnum, 12)]
        block = ('DATABASE_URL = "postgresql://app:{0}@10.1.2.3/appdb"\n'
                 'CACHE_URL = "redis://:{1}@localhost:6379/0"\n'
                 'SHOP_URL = "mysql://root:{2}@db:3306/shop"\n'
                 'REPLICA_URL = "postgres://report:{3}@replica.db.acme-widgets.com/appdb"\n'
                 'TEMPLATE_URL = "postgresql://${{DB_USER}}:${{DB_PASSWORD}}@db/app"\n'
                 'DOCS_URL = "https://docs.python.org:443/3/library/"\n\n')
        lines = original.splitlines(keepends=True)
        at = rng.choice([i for i, line in enumerate(lines) if re.match(r"(def|class) ", line)])
        planted = _insert(original, block.format(*passwords), at)
        spans = find_pii(planted)
        assert [s.rule for s in spans] == ["url_password"] * 4, name
        expected = _insert(original, block.format(*["<KEY>"] * 4), at)
        assert redact(planted, spans) == expected, name
        ast.parse(expected)


@pytest.mark.parametrize("key", ["ssl_key.pem", "keycertecc.pem", "pycakey.pem"])
def test_private_key_without_end_line_in_real_files(key: str) -> None:
    pem = _real_private_key(key)
    assert "-----END" in pem and find_pii(pem)[0].rule == "private_key_block"
    cut = pem[:pem.index("-----END")].rstrip("\n")  # the END line lost
    for name in HOSTS[:4]:
        original = (STDLIB / name).read_text()
        lines = original.splitlines(keepends=True)
        at = next(i for i, line in enumerate(lines) if re.match(r"(def|class) ", line))
        for text, placeholder in ((f'KEY = """{cut}\n"""\n\n', '"""<PRIVATE_KEY>\n"""'),
                                  (f"KEY = {json.dumps(cut)}\n\n", '"<PRIVATE_KEY>"')):
            planted = _insert(original, text, at)
            redacted = redact(planted, find_pii(planted))
            assert redacted == _insert(original, f"KEY = {placeholder}\n\n", at), (name, key)
            body = cut.splitlines()[1]
            assert body not in redacted and body[:40] not in redacted
