"""The redaction prefilter: `might_hold_secret`, a cheap test every rule is sound against.

Running every rule on every string would cost more than the whole import, so a text is
first checked in two passes at C speed:

- one Aho-Corasick automaton (`ahocorasick-rs`) over the lower-cased UTF-8 bytes finds
  the literal triggers: every key name, keyword and value shape with a literal anchor
  (``ghp_``, ``eyj``, ``-----begin ... private key``, ``password``, ``token=`` ...);
- one regular expression finds the detect-secrets shapes that have no literal anchor
  (Discord and Telegram bot tokens, Twilio account SIDs and API keys, Artifactory
  passwords, Mailchimp keys), with the library's own patterns.

Soundness: a text for which `might_hold_secret` is False is never changed by
`redact_text` (tests/test_redaction_shapes.py checks every shape alone in plain text). The
triggers are also sound on JSON source text (one check on a whole file): every trigger is
made of characters JSON never has to escape except the quote and backslash, whose escaped
form (``\\"``) still starts with a backslash trigger; a file that escapes printable ASCII
(``\\u0041``) always passes.
"""

from __future__ import annotations

import re
from functools import cache

import ahocorasick_rs

# Words a keyword rule anchors on (rules.py): the credential key names in text. "token"
# is common in transcripts ("input_tokens"), so it triggers only with a character that
# can follow a key in the rules (a quote, backslash, space, tab, ":" or "=").
_KEY_FOLLOWERS = "\"'`\\ \t:=]"
_FOLLOWED_WORDS = ("token", "credential", "cookie", "api key", "access key", "secret key")
# detect-secrets' keyword detector allows any word characters after its words, so these
# trigger alone.
_WORDS = (
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "secret",
    "api_key",
    "apikey",
    "api-key",
    "auth_key",
    "authkey",
    "service_key",
    "servicekey",
    "account_key",
    "accountkey",
    "db_key",
    "dbkey",
    "database_key",
    "databasekey",
    "priv_key",
    "privkey",
    "private_key",
    "privatekey",
    "private-key",
    "client_key",
    "clientkey",
    "db_pass",
    "dbpass",
    "database_pass",
    "databasepass",
    "key_pass",
    "keypass",
    "contrase",
    "access_key",
    "accesskey",
    "access-key",
    "token_id",
    "authoriz",
    "bearer",
)
# Query-string keys (rules.py `_QUERY`), anchored on the separator before them.
QUERY_KEYS = (
    "token",
    "access_token",
    "id_token",
    "refresh_token",
    "api_key",
    "apikey",
    "api-key",
    "key",
    "secret",
    "client_secret",
    "password",
    "passwd",
    "pwd",
    "sig",
    "signature",
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-security-token",
    "auth",
    "code",
)
# Value shapes with a literal anchor (detect-secrets and the fallbacks of rules.py).
_SHAPES = (
    "akia",
    "asia",
    "abia",
    "acca",
    "a3t",
    "aws",
    "://",
    ":\\/\\/",
    "private key",
    "putty-user-key",
    "sk-",
    "_live_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "gldt-",
    "glft-",
    "glsoat-",
    "glrt-",
    "glcbt-",
    "glimt-",
    "glptt-",
    "glagent-",
    "gloas-",
    "gr1348941",
    "xoxa-",
    "xoxb-",
    "xoxp-",
    "xoxo-",
    "xoxs-",
    "xoxr-",
    "eyj",
    "aiza",
    "hf_",
    "npm_",
    "_authtoken",
    "pypi-",
    "sg.",
    "sq0csp-",
    "sq0atp-",
    "accountkey",
    "akc",
    "ibm",
    "cloudant",
    "softlayer",
    "api.softlayer",
    # JSON that escapes printable ASCII (\\u0041) could hide any of the above
    "\\u002",
    "\\u003",
    "\\u004",
    "\\u005",
    "\\u006",
    "\\u007",
)

# The assignment detectors whose only literal is a common word (IBM Cloud IAM, SoftLayer,
# Cloudant: `key = <44 chars>`, `cl_pass: <64 hex>`; `build_assignment_regex`): the word
# followed by what the library allows next (a quote, "]", a space, "=" or ":").
_ASSIGNMENT_WORDS = ("key", "pass", "pwd", "pw")
_ASSIGNMENT_FOLLOWERS = "\"'] =:\\"

TRIGGERS: tuple[str, ...] = (
    *(word + c for word in _FOLLOWED_WORDS for c in _KEY_FOLLOWERS),
    *(word + c for word in _ASSIGNMENT_WORDS for c in _ASSIGNMENT_FOLLOWERS),
    *_WORDS,
    *(sep + key + "=" for key in QUERY_KEYS for sep in "?&;"),
    *_SHAPES,
)


@cache
def _trigger_matcher() -> ahocorasick_rs.BytesAhoCorasick:
    """The automaton of every trigger, built on first use (not when a process starts)."""
    return ahocorasick_rs.BytesAhoCorasick(
        [t.encode() for t in TRIGGERS], implementation=ahocorasick_rs.Implementation.DFA
    )


# detect-secrets' shapes without a literal anchor (plugins/discord.py, telegram_token.py,
# twilio.py, artifactory.py, mailchimp.py), each as a superset of the library's pattern
# that starts with a literal: Twilio's `AC`/`SK` + 32, Artifactory's `AP`+hex / `AKC`,
# Mailchimp's `-us<digit>`, Telegram's `:<35 chars>` and Discord's `.<6 chars>.<27
# chars>`. One pattern each, searched in turn: the regex engine skips ahead to a
# pattern's literal, which it cannot do for their alternation (a third less time on an
# OTLP batch's texts, which hold many of the alternation's first characters).
NO_LITERAL_SHAPES = tuple(
    re.compile(pattern)
    for pattern in (
        r"AC[a-z0-9]{32}",
        r"SK[a-z0-9]{32}",
        r"AP[0-9ABCDEF][a-zA-Z0-9]{8}",
        r"AKC[a-zA-Z0-9]{10}",
        r"-us[0-9]",
        r":[0-9A-Za-z_-]{35}",
        r"\.[a-zA-Z0-9_-]{6}\.[a-zA-Z0-9_-]{27}",
    )
)


def has_trigger(text: str) -> bool:
    """True when the lower-cased `text` holds one of the literal `TRIGGERS`."""
    data = text.lower().encode("utf-8", "surrogatepass")
    return bool(_trigger_matcher().find_matches_as_indexes(data))


def might_hold_secret(text: str) -> bool:
    """False only when `text` certainly holds nothing the rules would redact.

    Used once on a whole source file (about 0.1 s for a 21 MB file), then on each
    string of a file that passed.
    """
    return has_trigger(text) or any(shape.search(text) for shape in NO_LITERAL_SHAPES)
