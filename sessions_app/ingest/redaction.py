"""Credential redaction for everything an importer stores and everything an export writes.

One set of rules, applied at two boundaries: `redact_parse_result` on every parsed
transcript before it is written (`sessions_app.ingest.parse_file`), and `redact_value`
on every export document (`sessions_app.export`). A redacted value becomes the text
``[REDACTED:<kind>]``; redacting is idempotent (a marker is never redacted again).

Rules, and where they come from:

- Value shapes: the regex detectors of Yelp's `detect-secrets` library (AWS access key
  ids and quoted AWS secrets, credentials in URLs, GitHub/GitLab/Slack/Stripe/npm/PyPI/
  SendGrid/Twilio/... tokens, JWTs, legacy OpenAI keys), used as a library on in-memory
  strings (`plugin.analyze_string`). Left out on purpose: its public-IP detector (not a
  credential), its entropy detectors and its keyword detector (they flag ordinary code and
  hashes, and agent transcripts are full of both).
- Shapes that library does not know (a small well-known pattern set): current OpenAI
  (`sk-proj-...`, `sk-...`) and Anthropic (`sk-ant-...`) keys, Google API keys (`AIza...`),
  GitHub fine-grained tokens (`github_pat_...`), Hugging Face tokens (`hf_...`), whole
  PEM private-key blocks (detect-secrets finds only the BEGIN line), and
  ``KEY=value`` / ``KEY: "value"`` assignments in text where KEY is a credential name.
- Key names in structured data (dicts anywhere: tool arguments and results, state, raw
  source records): a string value under a key such as `secret_access_key`,
  `session_token`, `access_key_id`, `password`, `api_key`, `token`, `client_secret`,
  `private_key` or `authorization` (any case, `-`/camelCase folded to snake_case) is
  replaced whole. Non-string values (counts, flags, objects) are kept (objects are walked).

Speed: running ~20 detectors on every string would cost more than the whole import, so
`might_hold_secret` first looks at the source text once (plain substring tests, no regex
per string); a file with none of the trigger words is stored without the per-string walk.
The triggers are sound for JSON sources because every trigger is made of characters JSON
never has to escape, and a file that escapes printable ASCII (`\\u0041`) is always walked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, cast

import ahocorasick_rs

if TYPE_CHECKING:
    from sessions_app.ingest.parsed import ParsedSession, ParseResult

MARKER_PREFIX = "[REDACTED:"


def marker(kind: str) -> str:
    """The replacement text for a redacted value of `kind` (e.g. "[REDACTED:password]")."""
    return f"{MARKER_PREFIX}{kind}]"


# Key names (normalised to snake_case) whose string values are credentials, with their kind.
# fullmatch; checked in order.
_KEY_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), kind)
    for pattern, kind in (
        (r"(aws_)?secret_access_key", "aws_secret_access_key"),
        (r"(aws_)?(session|security)_token", "aws_session_token"),
        (r"(aws_)?access_key_id", "aws_access_key_id"),
        (r"(.*_)?(password|passwd|passphrase)", "password"),
        (r"(.*_)?api_?key", "api_key"),
        (r"(.*_)?(private_key|secret_key)", "private_key"),
        (r"(.*_)?secret", "secret"),
        (r"(.*_)?token", "token"),
        (r"(proxy_)?authorization", "authorization"),
    )
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@cache
def key_kind(key: str) -> str | None:
    """The credential kind for a dict key (e.g. "secretAccessKey" -> "aws_secret_access_key").

    None when the key is not a credential name. Keys are folded: camelCase -> snake_case,
    "-" and spaces -> "_", lower case. Plural forms ("input_tokens") do not match.
    """
    norm = _CAMEL.sub("_", key).lower().replace("-", "_").replace(" ", "_")
    for pattern, kind in _KEY_RULES:
        if pattern.fullmatch(norm):
            return kind
    return None


@dataclass(frozen=True, slots=True)
class _Finder:
    """A value-shape rule: yields the (start, end) spans of secrets in a string."""

    kind: str
    spans: Callable[[str], Iterable[tuple[int, int]]]


def _regex_finder(kind: str, pattern: re.Pattern[str], group: int = 0) -> _Finder:
    def spans(text: str) -> Iterable[tuple[int, int]]:
        for match in pattern.finditer(text):
            yield match.span(group)

    return _Finder(kind, spans)


def _detect_secrets_finders() -> list[_Finder]:
    """One finder per regex detector of detect-secrets (see the module docstring)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    skipped = {"IPPublicDetector", "PrivateKeyDetector"}  # not a credential / whole block below
    finders: list[_Finder] = []
    mapping: dict[str, type[Any]] = get_mapping_from_secret_type_to_class()
    for secret_type, plugin_class in sorted(mapping.items()):
        if not issubclass(plugin_class, RegexBasedDetector) or plugin_class.__name__ in skipped:
            continue
        # Abstract in the library's type hints, concrete at run time.
        plugin: Any = cast(Any, plugin_class)()
        kind = re.sub(r"[^a-z0-9]+", "_", secret_type.lower()).strip("_")

        def spans(text: str, plugin: Any = plugin) -> Iterable[tuple[int, int]]:
            # analyze_string yields the secret values (a capture group when the pattern has
            # one, e.g. the password of a URL); locate each occurrence in the text.
            for value in set(plugin.analyze_string(text)):
                if not value or value.startswith(MARKER_PREFIX):
                    continue
                start = text.find(value)
                while start != -1:
                    yield start, start + len(value)
                    start = text.find(value, start + len(value))

        finders.append(_Finder(kind, spans))
    return finders


_ASSIGNED_KEYS = (
    r"(?:[a-z0-9]+_)*(?:secret_access_key|session_token|access_key_id|password|passwd"
    r"|api_?key|secret|token)"
)

# Shapes detect-secrets lacks; each is a published, documented token format.
_FALLBACK_FINDERS: list[_Finder] = [
    _regex_finder(
        "private_key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
    ),
    _regex_finder("anthropic_api_key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    _regex_finder(
        "openai_api_key", re.compile(r"\bsk-(?:proj-|svcacct-|live-)?[A-Za-z0-9_-]{20,}")
    ),
    _regex_finder("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    _regex_finder("github_token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}")),
    _regex_finder("huggingface_token", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    # KEY=value (env files, shell, query strings) and KEY: "value" / "KEY": "value".
    _regex_finder(
        "assigned_secret",
        re.compile(
            rf"(?i)\b(?:{_ASSIGNED_KEYS})\b[\"']?(?:\s*=\s*[\"']?|\s*:\s*[\"'])"
            # A literal value with a digit, not code (`token = crypto.randomBytes(32)`).
            r"(?=[^\s\"'`,;&<>(){}\[\]$^]*\d)([^\s\"'`,;&<>(){}\[\]$^]{6,})(?![\w(])"
        ),
        group=1,
    ),
]

# Literal triggers, matched on the lower-cased UTF-8 bytes by one Aho-Corasick DFA
# (`ahocorasick-rs`, one pass at C speed): a text with none of them cannot match a key
# rule or a finder with a literal anchor. Every credential key name above contains one;
# so does every finder except five detect-secrets shapes that have no literal anchor
# (Discord and Telegram bot tokens, Twilio AC/SK keys, Artifactory AP keys, Mailchimp
# keys): those run only on strings that hit another trigger.
_TRIGGERS: tuple[str, ...] = (
    # key names and assignments
    "password",
    "passwd",
    "passphrase",
    "secret",
    "api_key",
    "apikey",
    "api-key",
    "access_key",
    "accesskey",
    'token"',
    "token'",
    "token=",
    "token:",
    "token ",
    "token\\",
    "token_id",
    "authoriz",
    "private_key",
    "privatekey",
    # value shapes (detect-secrets and the fallbacks)
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
    "pypi-",
    "sg.",
    "sq0csp-",
    "accountkey",
    "akc",
    # JSON that escapes printable ASCII (\\u0041) could hide any of the above
    "\\u002",
    "\\u003",
    "\\u004",
    "\\u005",
    "\\u006",
    "\\u007",
)
_TRIGGER_MATCHER = ahocorasick_rs.BytesAhoCorasick(
    [t.encode() for t in _TRIGGERS], implementation=ahocorasick_rs.Implementation.DFA
)


@cache
def _finders() -> tuple[_Finder, ...]:
    return (*_FALLBACK_FINDERS, *_detect_secrets_finders())


def might_hold_secret(text: str) -> bool:
    """False only when `text` certainly holds nothing the rules would redact.

    One pass of the trigger automaton over the lower-cased text (about 70 ms for a
    21 MB file): used once on a whole source file, then on each string of a walked one.
    """
    data = text.lower().encode("utf-8", "surrogatepass")
    return bool(_TRIGGER_MATCHER.find_matches_as_indexes(data))


def redact_text(text: str) -> str:
    """`text` with every credential-shaped substring replaced by its marker."""
    if len(text) < 8 or not might_hold_secret(text):
        return text
    spans: list[tuple[int, int, str]] = []
    for finder in _finders():
        for start, end in finder.spans(text):
            if end > start:
                spans.append((start, end, finder.kind))
    if not spans:
        return text
    # Longest first at each start; skip spans inside an already replaced one.
    spans.sort(key=lambda s: (s[0], -s[1]))
    out: list[str] = []
    pos = 0
    for start, end, kind in spans:
        if start < pos:
            continue
        if text.startswith(MARKER_PREFIX, start):
            continue
        out.append(text[pos:start])
        out.append(marker(kind))
        pos = end
    out.append(text[pos:])
    return "".join(out)


def redact_value(value: Any, key: str | None = None) -> Any:
    """A JSON-like value (dict / list / str / scalar) with credentials redacted.

    Returns the same object when nothing changed, else a new container; never mutates
    `value`. `key` is the dict key the value sits under (for the key-name rules).
    """
    if isinstance(value, str):
        if key is not None and value and not value.startswith(MARKER_PREFIX):
            kind = key_kind(key)
            if kind is not None:
                return marker(kind)
        return redact_text(value)
    if isinstance(value, dict):
        changed = False
        out: dict[Any, Any] = {}
        for k, v in value.items():
            new = redact_value(v, k if isinstance(k, str) else None)
            changed = changed or new is not v
            out[k] = new
        return out if changed else value
    if isinstance(value, list):
        items = [redact_value(v) for v in value]
        if any(new is not old for new, old in zip(items, value, strict=True)):
            return items
        return value
    return value


def redact_parsed_session(parsed: ParsedSession) -> None:
    """Redact, in place, every stored text and JSON value of a parsed session.

    Covers the title, state, turn notes and failure messages, todo items, and each
    event's text, reasoning, parts, tool calls (arguments), tool response (result or
    error), state delta and raw source records. Ids, roles and timestamps are left alone.
    """
    parsed.title = redact_text(parsed.title)
    parsed.state = redact_value(parsed.state)
    for turn in parsed.turns:
        turn.status_note = redact_text(turn.status_note)
        turn.failure_message = redact_text(turn.failure_message)
    for item in parsed.todos or []:
        item.content = redact_text(item.content)
        item.active_form = redact_text(item.active_form)
    for event in parsed.events:
        event.text = redact_text(event.text)
        event.reasoning = redact_text(event.reasoning)
        event.parts = redact_value(event.parts)
        event.tool_calls = redact_value(event.tool_calls)
        event.tool_response = redact_value(event.tool_response)
        event.state_delta = redact_value(event.state_delta)
        event.raw = redact_value(event.raw)


def redact_parse_result(result: ParseResult, source_text: str | None) -> None:
    """Redact every session of `result` in place, before anything is written.

    `source_text` is the file the result was parsed from: when it holds no trigger
    (`might_hold_secret`), no parsed string can hold a secret and the walk is skipped.
    Pass None to always walk.
    """
    if source_text is not None and not might_hold_secret(source_text):
        return
    for parsed in result.sessions:
        redact_parsed_session(parsed)
