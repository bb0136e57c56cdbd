"""The secret classes of a maintained rule set: detect-secrets 1.5.0 (Yelp, PyPI), as a library.

Every regex plugin detect-secrets ships (AWS, Artifactory, Azure, Cloudant, Discord, GitHub,
GitLab, IBM, JWT, Mailchimp, npm, OpenAI, private keys incl. PuTTY, PyPI, SendGrid, Slack,
SoftLayer, Square, Stripe, Telegram, Twilio, URL basic auth) is read from
`detect_secrets.plugins` at import, with the literals that open its windows (secrets.py).
A few classes detect-secrets does not name follow gitleaks 8.x rule ids
(`mailgun-private-api-token`) or are ours (an `Authorization: Basic` header, `Password=` in
ADO.NET / JDBC / ODBC connection strings). Its `KeywordDetector` is keyword_rule.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import cast

from detect_secrets.filters import heuristic
from detect_secrets.plugins.base import RegexBasedDetector

RULE_SET = "detect-secrets 1.5.0"


@dataclass(frozen=True)
class Rule:
    name: str  # detect-secrets' plugin class (or `gitleaks:<id>` / `lemur:<name>`)
    triggers: tuple[str, ...]  # literals one of which every match contains (lowercased)
    patterns: tuple[re.Pattern[str], ...]
    gate: re.Pattern[str] | None = None  # a cheap necessary shape, on the lowered window
    shape: re.Pattern[str] | None = None  # without triggers: a necessary shape, on the text


def _denylist(name: str) -> tuple[re.Pattern[str], ...]:
    """The regexes of detect-secrets' plugin `name` (a RegexBasedDetector)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    for plugin in get_mapping_from_secret_type_to_class().values():
        if plugin.__name__ == name and issubclass(plugin, RegexBasedDetector):
            # detect-secrets declares `denylist` a property; its plugins set a tuple
            return tuple(cast("Iterable[re.Pattern[str]]", plugin.denylist))
    raise LookupError(f"{RULE_SET} has no regex plugin {name}")


# The literals one of which every match of a plugin's denylist contains (lowercased: the
# automaton runs on the lowered text): a hit opens the plugin's window.
# IPPublicDetector is left out: ip addresses have their own rule in addresses.py, with the
# private and documentation ranges kept.
_KEY_NAMES = ("key", "pwd", "pass", "token")  # IBM, SoftLayer: (?:key|pwd|password|pass|token)
_PLUGIN_TRIGGERS: dict[str, tuple[str, ...]] = {
    "AWSKeyDetector": ("a3t", "abia", "acca", "akia", "asia", "aws"),
    "ArtifactoryDetector": (),
    "AzureStorageKeyDetector": ("accountkey=",),
    "BasicAuthDetector": ("://",),
    "CloudantDetector": (*_KEY_NAMES, "pw", "cloudant.com"),
    "DiscordBotTokenDetector": (),
    "GitHubTokenDetector": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    "GitLabTokenDetector": ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "gr1348941",
                            "glcbt-", "glimt-", "glptt-", "glagent-", "gloas-"),
    "IbmCloudIamDetector": _KEY_NAMES,
    "IbmCosHmacDetector": ("secret",),
    "JwtTokenDetector": ("eyj",),
    "MailchimpDetector": ("-us",),
    "NpmDetector": (":_authtoken=",),
    "OpenAIDetector": ("t3blbkfj",),
    "PrivateKeyDetector": ("begin ", "putty-user-key-file-2"),
    "PypiTokenDetector": ("pypi-ag",),
    "SendGridDetector": ("sg.",),
    "SlackDetector": ("xox", "hooks.slack.com"),
    "SoftlayerDetector": (*_KEY_NAMES, "api.softlayer.com"),
    "SquareOAuthDetector": ("sq0csp-",),
    "StripeDetector": ("k_live_",),
    "TelegramBotTokenDetector": (),
    "TwilioKeyDetector": (),  # AC / SK: case matters; its patterns scan the whole text
}

# Plugins without a literal rare enough: a necessary shape of their match, found on the
# (not lowered) text by a pattern that starts with a literal (sre skips ahead to it).
_SHAPES = {
    "ArtifactoryDetector": re.compile(r"AKC|AP[\dA-F]"),
    "DiscordBotTokenDetector": re.compile(r"\.[\w-]{6}\."),  # `\.[a-zA-Z\d_-]{6}\.`
    "TelegramBotTokenDetector": re.compile(r":[\w-]{35}"),  # `:[0-9A-Za-z_-]{35}`
}

# The IBM / Cloudant / SoftLayer patterns try an optional-everything prefix at every
# position of their window: a window runs them only if it holds the shape of their value
# (or, for Cloudant, of its key name) too (on the lowered window).
_GATES = {
    "ArtifactoryDetector": re.compile(r"akc[a-z0-9]{10}|ap[0-9a-f][a-z0-9]{8}"),
    "CloudantDetector": re.compile(r"cl(?:oudant|ou)?[_-]?(?:api)?(?:key|pw|pass|token)"
                                   r"|cloudant\.com"),
    "IbmCloudIamDetector": re.compile(r"[a-z0-9_\-]{44}"),
    "IbmCosHmacDetector": re.compile(r"[a-f0-9]{48}"),
    "SoftlayerDetector": re.compile(r"[a-z0-9]{64}"),
}

_EXTRA_RULES = (
    # gitleaks 8.x `mailgun-private-api-token` / `mailgun-signing-key`: key-<32 hex>.
    Rule("gitleaks:mailgun-private-api-token", ("key-",),
         (re.compile(r"(?<![\w-])key-([a-f0-9]{32})(?![\w-])"),)),
    # gitleaks 8.x `npm-access-token`; detect-secrets' NpmDetector wants the .npmrc line.
    Rule("gitleaks:npm-access-token", ("npm_",),
         (re.compile(r"(?<![\w-])npm_[A-Za-z0-9]{36}(?![\w-])"),)),
    # gitleaks 8.x `mailgun-pub-key`.
    Rule("gitleaks:mailgun-pub-key", ("pubkey-",),
         (re.compile(r"(?<![\w-])pubkey-([a-f0-9]{32})(?![\w-])"),)),
    # Not a detect-secrets or gitleaks class: `Authorization: Basic <base64 user:password>`
    # (curl -H, HTTP dumps, fetch headers). BasicAuthDetector covers URLs only.
    Rule("lemur:basic_auth_header", ("basic ",),
         (re.compile(r"(?i)\bauthorization[\"']?\s{0,3}[:=,]\s{0,3}[\"']?\s{0,3}basic\s+"
                     r"([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])"),)),
    # Not a detect-secrets class either (its KeywordDetector wants quotes in code files):
    # `Password=...;` in ADO.NET / ODBC strings and `password=...&` in JDBC URLs.
    Rule("lemur:connection_string_password", ("password", "pwd", "passwd"),
         (re.compile(r"(?i)(?:^|[;?&\s\"'{(])(?:password|pwd|passwd)"
                     r"(?:=|\s{1,3}=\s{0,3}(?=[^;\n]{1,128};))"
                     r"([^;&\"'\s<>{}(),\[\]]{1,128})(?=$|[;&\"'\s])"),)),
)


def _rules() -> tuple[Rule, ...]:
    rules = [Rule(name, triggers, _denylist(name), _GATES.get(name), _SHAPES.get(name))
             for name, triggers in _PLUGIN_TRIGGERS.items()]
    return (*rules, *_EXTRA_RULES)


RULES = _rules()


@dataclass(frozen=True)
class Found:
    """A secret at text[start:end], and the rule (or detect-secrets class) that found it."""

    start: int
    end: int
    rule: str


_TEMPLATE = re.compile(r"[$%{<*].*|.*[}>]|\*+|x+|\.{3}|(?i:none|null|true|false|nil|"
                       r"changeme|password|secret|undefined|redacted|hidden|example)")


def placeholder(secret: str) -> bool:
    """detect-secrets' template and `$VAR` heuristics, and values that name no secret."""
    return (len(secret) < 3 or heuristic.is_templated_secret(secret)
            or heuristic.is_prefixed_with_dollar_sign(secret)
            or _TEMPLATE.fullmatch(secret) is not None)
