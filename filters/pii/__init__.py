"""Find and replace personal data and secrets, as StarCoder's PII pass did.

Kinds and their placeholders: emails `<EMAIL>`, public IP addresses `<IP_ADDRESS>`,
keys, tokens and passwords in URLs (`scheme://user:PASSWORD@host`) `<KEY>`, private key
blocks (also one cut off before its END line) `<PRIVATE_KEY>`. Only the secret itself is
replaced, never the quotes or the `key = ` around it, so code that parsed before still
parses.

- `find.py`: `find_pii`, every rule below in priority order, overlaps resolved;
- `redact.py`: `Span`, the placeholders, `redact` (no rule: cheap to import);
- `private_keys.py`: PEM blocks (whole or cut off) and PuTTY keys;
- `keys.py`: passwords in URLs, tokens with a recognisable shape, random values
  assigned to key-like names;
- `addresses.py`: e-mails and public IP addresses;
- `secrets.py`: detect-secrets 1.5.0's classes over whole texts, in windows around one
  Aho-Corasick pass; its rule set is `secret_rules.py`, its KeywordDetector
  `keyword_rule.py`, the windows' geometry `windows.py`.

This `__init__` imports nothing: detect-secrets and the compiled rules (~0.25 s) load
only where `find.py` is imported, so a caller that only reads placeholders (the stage's
`locate` hook) does not pay for them.
"""
