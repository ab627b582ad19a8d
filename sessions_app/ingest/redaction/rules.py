"""The redaction rules: key names in structured data, and finders of secrets in text.

A finder yields ``(start, end, kind)`` spans; `core.redact_text` widens each span to the
whole token it sits in and replaces it. Three sets:

- detect-secrets (Yelp's library, used on in-memory strings): every regex detector
  (AWS, Artifactory, Azure storage, basic auth in URLs, Cloudant, Discord, GitHub,
  GitLab, IBM, JWT, Mailchimp, npm, OpenAI, PyPI, SendGrid, Slack, SoftLayer, Square,
  Stripe, Telegram, Twilio) and its keyword detector (``password = "..."`` with quotes).
  Left out: its public-IP detector (not a credential), its private-key detector (finds
  the BEGIN line only; `_PEM` takes the whole block) and its entropy detectors (they
  flag every quoted hash and id in a transcript).
- value shapes the library lacks: current OpenAI/Anthropic keys, Google API keys, GitHub
  fine-grained tokens, Hugging Face tokens, whole PEM blocks, whole JWTs (the library's
  pattern stops before the signature), AWS secret keys near "aws" without quotes.
- keyword-anchored rules for what shapes alone miss: HTTP credential headers
  (``Authorization:`` of any scheme, ``Cookie:``, ``X-Api-Key:``: the whole value), a
  credential name followed by a value (``password: x``, ``pwd=...``, ``export
  FOO_TOKEN=...``, ``AWS_SECRET_ACCESS_KEY=...``, prose ``the password is hunter2``),
  credential keys in URL queries (``?token=``, ``&api_key=``), URL userinfo
  (``https://user:pass@host``) and ``Bearer <token>``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import cache, lru_cache
from typing import Any, cast

from sessions_app.ingest.redaction.prefilter import QUERY_KEYS

#: What every text marker starts with: ``[REDACTED:<kind>]``.
MARKER_PREFIX = "[REDACTED:"
#: What every id marker starts with: ``REDACTED-<kind>`` (URL-safe, no "/").
ID_MARKER_PREFIX = "REDACTED-"

Span = tuple[int, int, str]
Finder = Callable[[str], Iterator[Span]]


def marker(kind: str) -> str:
    """The replacement text for a redacted value of `kind` (e.g. "[REDACTED:password]")."""
    return f"{MARKER_PREFIX}{kind}]"


def id_marker(kind: str) -> str:
    """The replacement inside an id (e.g. "REDACTED-github_token"): URL-safe, stable."""
    return f"{ID_MARKER_PREFIX}{kind}"


# Key names (normalised to snake_case) whose string values are credentials, with their
# kind; fullmatch, checked in order.
_KEY_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), kind)
    for pattern, kind in (
        (r"(aws_)?secret_access_key", "aws_secret_access_key"),
        (r"(aws_)?(session|security)_token", "aws_session_token"),
        (r"(aws_)?access_key_id", "aws_access_key_id"),
        (r"(.*_)?(password|passwd|passphrase|pwd)", "password"),
        (r"(.*_)?api_?key", "api_key"),
        (r"(.*_)?(private_key|secret_key)", "private_key"),
        (r"(.*_)?(secret|credentials?)", "secret"),
        (r"(.*_)?token", "token"),
        (r"(proxy_)?authorization", "authorization"),
        (r"(set_)?cookie", "cookie"),
    )
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


# Bounded: the names come from what exporters and files send, so their number is not.
@lru_cache(maxsize=8192)
def key_kind(key: str) -> str | None:
    """The credential kind for a key name (e.g. "secretAccessKey" -> "aws_secret_access_key").

    None when the key is not a credential name. Keys are folded: camelCase -> snake_case,
    "-", "." and spaces -> "_", lower case. Plural forms ("input_tokens") do not match.
    """
    norm = _CAMEL.sub("_", key).lower()
    for old in "-. ":
        norm = norm.replace(old, "_")
    for pattern, kind in _KEY_RULES:
        if pattern.fullmatch(norm):
            return kind
    return None


def _regex_finder(kind: str, pattern: re.Pattern[str], group: int = 0) -> Finder:
    def find(text: str) -> Iterator[Span]:
        for match in pattern.finditer(text):
            start, end = match.span(group)
            if end > start:
                yield start, end, kind

    return find


_EDGE = " \t\r\n\"'`=:,"


def _group_finder(kind: str, pattern: re.Pattern[str]) -> Finder:
    """Spans of what detect-secrets' `analyze_string` yields for `pattern`: every
    non-empty group of a match (the whole match when it has none)."""

    def find(text: str) -> Iterator[Span]:
        for match in pattern.finditer(text):
            groups = [i for i in range(1, (pattern.groups or 0) + 1) if match.group(i)]
            for i in groups or [0]:
                start, end = match.span(i)
                # A whole match may take the delimiters around the token (Artifactory's
                # `(?:\s|=|:|"|^)AKC...`): trimmed, so the marker leaves them in place.
                while start < end and text[start] in _EDGE:
                    start += 1
                while end > start and text[end - 1] in _EDGE:
                    end -= 1
                if end > start:
                    yield start, end, kind

    return find


def _detect_secrets_finders() -> list[Finder]:
    """One finder per regex of every detect-secrets detector kept (see module doc)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.keyword import QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP

    skipped = {"IPPublicDetector", "PrivateKeyDetector"}
    finders: list[Finder] = []
    mapping: dict[str, type[Any]] = get_mapping_from_secret_type_to_class()
    for secret_type, plugin_class in sorted(mapping.items()):
        if not issubclass(plugin_class, RegexBasedDetector) or plugin_class.__name__ in skipped:
            continue
        kind = re.sub(r"[^a-z0-9]+", "_", secret_type.lower()).strip("_")
        for pattern in cast(Any, plugin_class).denylist:
            finders.append(_group_finder(kind, pattern))
    for pattern, group in QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP.items():
        finders.append(_regex_finder("secret_keyword", pattern, group))
    return finders


_PEM = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
    r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)
_AWS_UNQUOTED = re.compile(
    r"(?i:aws)[^\n]{0,40}?(?<![A-Za-z0-9/+])([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
)


def _aws_unquoted(text: str) -> Iterator[Span]:
    # A base64 secret has both cases; a git SHA (lower-case hex) near "aws" is kept.
    for match in _AWS_UNQUOTED.finditer(text):
        value = match.group(1)
        if value.lower() != value and value.upper() != value:
            yield *match.span(1), "aws_secret_access_key"


# Shapes detect-secrets lacks; each is a published, documented token format.
_SHAPE_FINDERS: list[Finder] = [
    _regex_finder("private_key", _PEM),
    _regex_finder("anthropic_api_key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    _regex_finder(
        "openai_api_key", re.compile(r"\bsk-(?:proj-|svcacct-|live-)?[A-Za-z0-9_-]{20,}")
    ),
    _regex_finder("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    _regex_finder("github_token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}")),
    _regex_finder("huggingface_token", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    _regex_finder("npm_token", re.compile(r"\bnpm_[A-Za-z0-9]{36}")),
    # detect-secrets wants a space, "=", ":" or quote before it; an id has "-" there.
    _regex_finder("artifactory_credentials", re.compile(r"\bAKC[a-zA-Z0-9]{10,}")),
    _regex_finder(
        "json_web_token",
        re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}(?:\.[A-Za-z0-9_-]*)?"),
    ),
    _aws_unquoted,
]

# -- keyword-anchored rules ------------------------------------------------------------

# A quote, possibly JSON-escaped once or twice (text that holds JSON).
_QUOTE = r"(?:\\{0,3}[\"'`])"
_LEAD = r"(?<![A-Za-z0-9_])"
_WORD = (
    r"(?:password|passwd|passphrase|pwd|secret[_ -]?access[_ -]?key|secret[_ -]?key|secret"
    r"|client[_-]?secret|api[_ -]?key|apikey|access[_ -]?key(?:[_-]?id)?|private[_ -]?key"
    r"|auth[_-]?token|token|credentials?)"
)
_KEY = rf"_?(?:[A-Za-z0-9]+[_.-])*{_WORD}"  # "_authToken" (.npmrc) too
_ASSIGN = re.compile(
    rf"(?i){_LEAD}(?:export[ \t]+)?({_KEY})(?![A-Za-z0-9_]){_QUOTE}?\]?[ \t]*(?::=|=>|=|:)[ \t]*"
)
_PROSE = re.compile(
    rf"(?i){_LEAD}({_WORD})(?![A-Za-z0-9_])[ \t]+(?:is|was)"
    r"(?:[ \t]+(?:now|still|set[ \t]+to))?(?:[ \t]*:)?[ \t]+"
)
_HEADER = re.compile(
    r"(?i)(?<![A-Za-z0-9_])((?:proxy-)?authorization|cookie|set-cookie|x-api-key|x-auth-token)"
    rf"{_QUOTE}?[ \t]*[:=][ \t]*"
)
_OPEN_QUOTE = re.compile(r"(\\{0,3})([\"'`])")
_BARE_VALUE = re.compile(r"[^\s\"'`\\,;<>(){}\[\]]+")
_TO_LINE_END = re.compile(r"[^\r\n]+")
# An auth scheme with auth-params (RFC 9110 §11.4: Digest's `k="v", ...`, AWS4's
# `Credential=..., Signature=...`): quoted params may hold the quote the header opened with.
_PARAM = r"[A-Za-z0-9_-]+=(?:\"[^\"\n]*\"|[^\s,\"']*)"
_SCHEME_PARAMS = re.compile(rf"[A-Za-z0-9-]+[ \t]+{_PARAM}(?:[ \t]*,[ \t]*{_PARAM})*")
_QUOTE_BEFORE = re.compile(r"(\\{0,3})([\"'`])\Z")
# `self.token`, `settings.SECRET_KEY`: code (a value with a digit is taken as a secret).
_DOTTED_NAME = re.compile(r"[A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_][A-Za-z_]*)+")
_QUERY = re.compile(
    r"(?i)[?&;](?:" + "|".join(re.escape(k) for k in QUERY_KEYS) + r")=([^&#\s\"'<>\\()\[\]{}]+)"
)
_USERINFO = re.compile(
    r"(?i)\b[a-z][a-z0-9+.-]*:(?:\\?/){2}([^/\s:@\"'<>\\]+)(?::([^/\s@\"'<>\\]*))?@"
)
_BEARER = re.compile(r"(?i)\bbearer[ \t]+([A-Za-z0-9._~+/=-]{8,})")
# Values after a credential name that are code or placeholders, not secrets.
_NOT_VALUES = frozenset(
    "str string int bool boolean bytes none null nil true false undefined optional any "
    "object required secretstr text input prompt env redacted hidden masked "
    "the a an is to for and or not see your this that it here below above".split()
)


def _closing(text: str, start: int, quote: str, escapes: int) -> int:
    """Where the quote `quote` escaped by exactly `escapes` backslashes closes, from
    `start` (the index of its first backslash), else the end of the line or text."""
    line_end = text.find("\n", start)
    limit = len(text) if line_end == -1 else line_end
    pos = start
    while True:
        found = text.find(quote, pos, limit)
        if found == -1:
            return limit
        run = 0
        while found - run - 1 >= start and text[found - run - 1] == "\\":
            run += 1
        if run == escapes:
            return found - escapes
        pos = found + 1


def _quoted(text: str, pos: int) -> tuple[int, int] | None:
    """The span inside the (escaped) quotes opening at `pos`, to the closing one at the
    same escape level or the end of the line; None when no quote opens there."""
    match = _OPEN_QUOTE.match(text, pos)
    if match is None:
        return None
    start = match.end()
    return start, _closing(text, start, match.group(2), len(match.group(1)))


def _folded(name: str) -> str:
    return "".join(c for c in name.lower() if c.isalnum())


def _value(text: str, pos: int, key: str, prose: bool) -> tuple[int, int] | None:
    """The span of the value a credential name at `pos` is given, or None for code
    (``token = crypto.randomBytes(32)``, ``password: str``, ``$VAR``, ``self.token``)."""
    quoted = _quoted(text, pos)
    if quoted is not None:
        start, end = quoted
        value = text[start:end]
        if not value.strip() or value[0] in "{$%" or value.startswith(MARKER_PREFIX):
            return None
        return start, end
    match = _BARE_VALUE.match(text, pos)
    if match is None:
        return None
    start, end = match.span()
    while prose and end > start and text[end - 1] in ".:!?":
        end -= 1
    value = text[start:end]
    if (
        not value
        or text[end : end + 1] in ("(", "[")
        or value[0] in "$%&*|"
        or value.lower() in _NOT_VALUES
        # `_csrf_token: csrfToken`, `password=password`, `self.api_key = api_key`
        or (len(_folded(value)) >= 4 and _folded(key).endswith(_folded(value)))
        or value.startswith(ID_MARKER_PREFIX)
        or _DOTTED_NAME.fullmatch(value)
        or (prose and value.isalpha())
    ):
        return None
    return start, end


def _kind_of(key: str) -> str:
    return key_kind(key.replace(" ", "_")) or "secret"


def _assignments(text: str) -> Iterator[Span]:
    for pattern, prose in ((_ASSIGN, False), (_PROSE, True)):
        for match in pattern.finditer(text):
            span = _value(text, match.end(), match.group(1), prose)
            if span is not None:
                yield *span, _kind_of(match.group(1))


def _headers(text: str) -> Iterator[Span]:
    for match in _HEADER.finditer(text):
        pos = match.end()
        span = _quoted(text, pos)
        opened = _QUOTE_BEFORE.search(text, max(0, match.start() - 4), match.start())
        if span is None and opened is not None:
            # "Authorization: Bearer x" inside quotes: the value ends where they close.
            span = pos, _closing(text, pos, opened.group(2), len(opened.group(1)))
        elif span is None:
            # A bare header line: the whole rest of the line (Digest's quoted fields too).
            value = _TO_LINE_END.match(text, pos)
            span = value.span() if value else None
        params = _SCHEME_PARAMS.match(text, pos)
        if span is not None and params is not None and params.end() > span[1]:
            span = span[0], params.end()
        if span is None or not text[span[0] : span[1]].strip():
            continue
        if text.startswith(MARKER_PREFIX, span[0]):
            continue
        yield *span, _kind_of(match.group(1))


def _urls(text: str) -> Iterator[Span]:
    for match in _QUERY.finditer(text):
        yield *match.span(1), "url_secret"
    for match in _USERINFO.finditer(text):
        if match.group(2):
            yield *match.span(2), "url_password"
        elif len(match.group(1)) >= 16 and any(c.isdigit() for c in match.group(1)):
            yield *match.span(1), "url_token"  # https://<token>@host
    for match in _BEARER.finditer(text):
        value = match.group(1)
        if len(value) >= 20 or any(c.isdigit() for c in value):
            yield *match.span(1), "bearer_token"


@cache
def finders() -> tuple[Finder, ...]:
    """Every finder, in the order they run (the order does not change the result)."""
    return (*_SHAPE_FINDERS, _headers, _assignments, _urls, *_detect_secrets_finders())
