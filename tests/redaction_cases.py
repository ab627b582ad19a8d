"""Credential shapes and transcripts that carry them, for tests/test_redaction_shapes.py.

Every secret is built at test time from pieces and seeded random bodies, so this file
holds nothing a secret scanner would take for a live credential. A `Shape` is the text
planted (the secret in its usual context: a header, an env line, prose) and the
strings that must never be found afterwards: the secret itself and a distinctive
substring of its body.
"""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass
from typing import Any

_RANDOM = random.Random(20261201)
_ALNUM = string.ascii_letters + string.digits


def _pick(alphabet: str, n: int) -> str:
    return "".join(_RANDOM.choice(alphabet) for _ in range(n))


def alnum(n: int) -> str:
    """`n` random letters and digits, with at least one digit, one upper, one lower."""
    body = _pick(_ALNUM, n - 3) + _pick(string.digits, 1)
    return body[: n // 2] + _pick(string.ascii_uppercase, 1) + body[n // 2 :] + "q"


def lowhex(n: int) -> str:
    """`n` random lower-case hex digits."""
    return _pick("0123456789abcdef", n)


def digits(n: int) -> str:
    """`n` random digits, the first not 0."""
    return _pick("123456789", 1) + _pick(string.digits, n - 1)


def b64url(data: bytes) -> str:
    """URL-safe base64 without padding (JWT segments)."""
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


@dataclass(frozen=True)
class Shape:
    """A planted credential: `text` in context, `secrets` that must never be found."""

    name: str
    text: str
    secrets: tuple[str, ...]

    @property
    def fragments(self) -> tuple[str, ...]:
        """Each secret and a distinctive 10-character piece from the middle of it."""
        out: list[str] = []
        for secret in self.secrets:
            out.append(secret)
            if len(secret) >= 16:
                middle = len(secret) // 2
                out.append(secret[middle - 5 : middle + 5])
        return tuple(out)

    @property
    def id_form(self) -> str | None:
        """The text as it can sit inside an id or a file name (None: it holds "/" or a
        line break, which neither may hold)."""
        if "/" in self.text or "\n" in self.text or len(self.text) > 150:
            return None
        return self.text


def _pem(label: str) -> tuple[str, str]:
    body = "\n".join(_pick(_ALNUM + "+/", 64) for _ in range(3))
    begin, end = "-----BEGIN " + label + "-----", "-----END " + label + "-----"
    return f"{begin}\n{body}\n{end}", body.splitlines()[1]


def _shapes() -> list[Shape]:
    aws_id = "AK" + "IA" + _pick(string.ascii_uppercase + string.digits, 16)
    aws_secret = alnum(38) + "+" + _pick(string.ascii_letters, 1)
    password = "Kq7" + alnum(11)
    basic_pair = f"deploy:{alnum(14)}"
    basic = base64.b64encode(basic_pair.encode()).decode()
    ghp_body = alnum(36)
    jwt_head = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    jwt_body = b64url(json.dumps({"sub": digits(10), "name": "Ada"}).encode())
    jwt = f"{jwt_head}.{jwt_body}.{b64url(bytes(_RANDOM.randrange(256) for _ in range(32)))}"
    pem_rsa, rsa_line = _pem("RSA PRIVATE KEY")
    pem_ssh, ssh_line = _pem("OPENSSH PRIVATE KEY")
    nonce, response = lowhex(32), lowhex(32)
    signature = lowhex(64)
    azure = _pick(_ALNUM + "+", 86) + "=="

    def shape(name: str, template: str, secret: str, *more: str) -> Shape:
        return Shape(name, template.replace("{s}", secret), (secret, *more))

    return [
        shape("aws_access_key_id", "access key id {s} for deploys", aws_id),
        shape("aws_secret_unquoted", "aws_secret_access_key = {s}", aws_secret),
        shape("aws_secret_prose", "AWS secret key: {s}", aws_secret[::-1]),
        shape("aws_env_dump", "AWS_SECRET_ACCESS_KEY={s}", alnum(40)),
        shape("bearer", "Authorization: Bearer {s}", alnum(40)),
        shape("basic", "Authorization: Basic {s}", basic, basic_pair.split(":")[1]),
        shape("token_scheme", "Authorization: Token {s}", lowhex(40)),
        shape(
            "digest",
            'Authorization: Digest username="bob", realm="api", nonce="{s}", '
            f'response="{response}"',
            nonce,
            response,
        ),
        shape(
            "aws4_hmac",
            f"Authorization: AWS4-HMAC-SHA256 Credential={aws_id}/20260101/us-east-1/s3/"
            "aws4_request, SignedHeaders=host;x-amz-date, Signature={s}",
            signature,
            aws_id,
        ),
        shape("cookie", "Cookie: sessionid={s}; theme=dark", alnum(32)),
        shape("prose_password", "the password is {s}, keep it safe", password),
        shape("colon_password", "password: {s}", password[::-1]),
        shape("pwd_assignment", "pwd={s}", alnum(12)),
        shape("prose_secret", "The secret is {s}.", alnum(16)),
        shape("prose_api_key", "my api key is {s}", alnum(24)),
        shape("export_token", "export DEPLOY_TOKEN={s}", alnum(30)),
        shape("url_userinfo", "https://deploy:{s}@git.example.com/r.git", alnum(15)),
        shape("url_query_token", "https://api.example.com/v1/items?token={s}&page=2", alnum(30)),
        shape("url_query_api_key", "https://api.example.com/v1?page=2&api_key={s}", alnum(30)),
        shape("github_classic", "gh" + "p_{s}_" + digits(10), ghp_body, ghp_body[-6:] + "_"),
        shape("github_fine_grained", "github" + "_pat_{s}", alnum(22) + "_" + alnum(59)),
        shape("gitlab", "glp" + "at-{s}", alnum(20)),
        shape("slack_bot", "xo" + "xb-{s}", digits(12) + "-" + digits(13) + "-" + lowhex(24)),
        shape(
            "slack_webhook",
            "https://hooks.slack.com/services/T"
            + _pick(string.ascii_uppercase, 8)
            + "/B"
            + _pick(string.ascii_uppercase, 8)
            + "/{s}",
            alnum(24),
        ),
        shape("stripe", "sk" + "_live_{s}", alnum(24)),
        shape("openai_project", "sk-" + "proj-{s}", alnum(48)),
        shape("anthropic", "sk-" + "ant-api03-{s}", alnum(80)),
        shape("google", "AI" + "za{s}", alnum(35)),
        shape("huggingface", "h" + "f_{s}", alnum(34)),
        shape("npm", "np" + "m_{s}", alnum(36)),
        shape("npmrc", "//registry.npmjs.org/:_auth" + "Token={s}", alnum(36)),
        shape("pypi", "pypi-" + "AgEIcHlwaS5vcmc{s}", alnum(70)),
        shape("sendgrid", "S" + "G.{s}", alnum(22) + "." + alnum(43)),
        shape("discord", "{s}", "M" + alnum(23) + "." + alnum(6) + "." + alnum(27)),
        shape("telegram", "bot {s}", digits(9) + ":" + alnum(35)),
        shape("twilio_sid", "A" + "C{s}", lowhex(32)),
        shape("twilio_key", "S" + "K{s}", lowhex(32)),
        shape("mailchimp", "{s}-us" + digits(2), lowhex(32)),
        shape("artifactory", "AK" + "C{s}", alnum(60)),
        shape("jwt", "{s}", "ey" + jwt[2:], jwt[-20:]),
        shape("pem_rsa", "{s}", pem_rsa, rsa_line),
        shape("pem_openssh", "{s}", pem_ssh, ssh_line),
        shape(
            "azure_storage",
            "DefaultEndpointsProtocol=https;AccountName=acct;Account" + "Key={s}",
            azure,
        ),
        shape("square", "sq0" + "csp-{s}", alnum(43)),
        shape("ibm_cloud_iam", "key = {s}", alnum(44)),
        shape(
            "softlayer", "softlayer_api_key: {s}", _pick(string.ascii_lowercase, 30) + digits(34)
        ),
        shape("cloudant", "cloudant_password = '{s}'", lowhex(64)),
        shape("ibm_cos_hmac", "cos_hmac_secret_access_key = {s}", lowhex(48)),
        shape("openai_legacy", "sk-{s}", alnum(20) + "T3Blbk" + "FJ" + alnum(20)),
        shape(
            "npmrc_uuid",
            "//registry.npmjs.org/:_auth" + "Token={s}",
            "-".join(lowhex(n) for n in (8, 4, 4, 4, 12)),
        ),
        shape("keyword_quoted", 'db_password = "{s}"', alnum(18)),
        shape("json_in_text", '{"api_key": "{s}"}', alnum(32)),
    ]


SHAPES: list[Shape] = _shapes()
ALL_TEXT = "\n".join(s.text for s in SHAPES)


# -- transcripts in every import format, every field holding `text` ---------------------
# `text` goes in every text slot, `ident` in every id slot (session, message, call and
# event ids, app names, users); the file name holds `ident` too.


def _prompt(text: str) -> str:
    # The secret starts before the 80-character title cut and runs across it.
    return "Please deploy the service now, using the credentials below, thank you: " + text


def claude_code(text: str, ident: str) -> tuple[str, str]:
    """A Claude Code JSONL (file name, content)."""
    sid = f"claude-{ident}"
    common = {"sessionId": sid, "version": "2.0.0", "cwd": f"/work/{ident}", "gitBranch": text}
    call, todo_call = f"toolu-{ident}", f"toolu2-{ident}"
    nested = json.dumps({"stdout": json.dumps({"log": text})})
    lines: list[dict[str, Any]] = [
        {
            "type": "user",
            "uuid": f"u1-{ident}",
            "message": {"role": "user", "content": _prompt(text)},
        },
        {
            "type": "assistant",
            "uuid": f"u2-{ident}",
            "message": {
                "id": f"msg-{ident}",
                "role": "assistant",
                "model": f"model-{ident}",
                "content": [
                    {"type": "thinking", "thinking": text},
                    {"type": "text", "text": text},
                    {
                        "type": "tool_use",
                        "id": call,
                        "name": "Bash",
                        "input": {"command": text, ident: text, "env": {"NOTE": text}},
                    },
                    {
                        "type": "tool_use",
                        "id": todo_call,
                        "name": "TodoWrite",
                        "input": {
                            "todos": [{"content": text, "status": "pending", "activeForm": text}]
                        },
                    },
                ],
                "usage": {"input_tokens": 3, "output_tokens": 5, "service_tier": text},
            },
        },
        {
            "type": "user",
            "uuid": f"u3-{ident}",
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": call, "content": nested},
                    {"type": "tool_result", "tool_use_id": todo_call, "content": text},
                ],
            },
        },
        {
            "type": "user",
            "uuid": f"u4-{ident}",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "x",
                        "is_error": True,
                        "content": [{"type": "text", "text": text}],
                    }
                ],
            },
        },
        {
            "type": "assistant",
            "uuid": f"u5-{ident}",
            "message": {"id": f"msg2-{ident}", "role": "assistant", "content": text},
        },
    ]
    out = [
        json.dumps({**common, **line, "timestamp": f"2026-01-01T00:00:0{i}Z"})
        for i, line in enumerate(lines)
    ]
    return f"claude-{ident}.jsonl", "\n".join(out) + "\n"


def codex_cli(text: str, ident: str) -> tuple[str, str]:
    """A Codex CLI rollout JSONL (file name, content)."""

    def item(kind: str, payload: dict[str, Any]) -> str:
        return json.dumps({"timestamp": "2026-01-01T00:00:00Z", "type": kind, "payload": payload})

    call, plan = f"call-{ident}", f"plan-{ident}"
    lines = [
        item(
            "session_meta",
            {"id": f"codex-{ident}", "timestamp": "2026-01-01T00:00:00Z", "cwd": text},
        ),
        item(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": _prompt(text)}],
            },
        ),
        item("response_item", {"type": "reasoning", "summary": [{"type": "x", "text": text}]}),
        item(
            "event_msg",
            {
                "type": "token_count",
                "info": {
                    "last_token_usage": {
                        "input_tokens": 3,
                        "output_tokens": 4,
                        "total_tokens": 7,
                        "model": text,
                    }
                },
            },
        ),
        item(
            "response_item",
            {
                "type": "function_call",
                "name": "shell",
                "call_id": call,
                "arguments": json.dumps({"command": ["bash", "-lc", text], "workdir": text}),
            },
        ),
        item(
            "response_item",
            {
                "type": "function_call_output",
                "call_id": call,
                "output": json.dumps({"output": text, "meta": json.dumps({"k": text})}),
            },
        ),
        item(
            "response_item",
            {
                "type": "function_call",
                "name": "update_plan",
                "call_id": plan,
                "arguments": json.dumps({"plan": [{"step": text, "status": "pending"}]}),
            },
        ),
        item("response_item", {"type": "function_call_output", "call_id": plan, "output": text}),
        item(
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "id": f"m-{ident}",
                "content": [{"type": "output_text", "text": text}],
            },
        ),
    ]
    return f"codex-{ident}.jsonl", "\n".join(lines) + "\n"


def google_adk(text: str, ident: str) -> tuple[str, str]:
    """A Google ADK session JSON (file name, content)."""
    nested = json.dumps({"x": json.dumps({"y": text})})
    doc = {
        "id": f"adk-{ident}",
        "app_name": f"app-{ident}",
        "user_id": f"user-{ident}",
        "state": {"note": text, ident: text},
        "last_update_time": 1767225600,
        "events": [
            {"id": f"e1-{ident}", "author": "user", "timestamp": 1767225600,
             "content": {"role": "user", "parts": [{"text": _prompt(text)}]}},
            {
                "id": f"e2-{ident}",
                "author": f"agent-{ident}",
                "timestamp": 1767225601,
                "content": {"role": "model", "parts": [
                    {"text": text},
                    {"text": text, "thought": True},
                    {"function_call": {"id": f"fc-{ident}", "name": "lookup", "args": {"q": text}}},
                ]},
                "actions": {"state_delta": {"k": text}},
                "usage_metadata": {"prompt_token_count": 3, "model_version": text},
            },
            {
                "id": f"e3-{ident}",
                "author": "agent",
                "timestamp": 1767225602,
                "content": {"role": "user", "parts": [{"function_response": {
                    "id": f"fc-{ident}", "name": "lookup",
                    "response": {"result": text, "raw": nested}}}]},
            },
            {"id": f"e4-{ident}", "author": "agent", "timestamp": 1767225603,
             "content": {"role": "model", "parts": [{"text": text}]},
             "error_code": f"quota-{ident}"},
        ],
    }  # fmt: skip
    return f"adk-{ident}.json", json.dumps(doc)


def _chat_messages(text: str, ident: str) -> list[dict[str, Any]]:
    call = f"call-{ident}"
    return [
        {"role": "system", "content": text},
        {"role": "user", "content": _prompt(text)},
        {"role": "assistant", "content": text, "reasoning_content": text, "name": f"bot-{ident}",
         "tool_calls": [{"id": call, "type": "function", "function": {
             "name": "run", "arguments": json.dumps({"cmd": text})}}]},
        {"role": "tool", "tool_call_id": call,
         "content": json.dumps({"out": json.dumps({"k": text})})},
        {"role": "assistant", "content": [{"type": "text", "text": text}]},
    ]  # fmt: skip


def openai_chat(text: str, ident: str) -> tuple[str, str]:
    """An OpenAI chat-completions message list (file name, content)."""
    return f"chat-{ident}.json", json.dumps(_chat_messages(text, ident))


def swe_agent(text: str, ident: str) -> tuple[str, str]:
    """A SWE-agent trajectory (file name, content)."""
    messages = _chat_messages(text, ident)
    messages[3] = {**messages[3], "tool_call_ids": [messages[3].pop("tool_call_id")]}
    doc = {
        "trajectory": [{"action": text, "observation": text, "thought": text}],
        "info": {"model_stats": {"note": text}},
        "history": [{**m, "agent": f"main-{ident}"} for m in messages],
    }
    return f"swe-{ident}.traj.json", json.dumps(doc)


def run_state(text: str, ident: str) -> tuple[str, str]:
    """An OpenAI Agents SDK RunState (file name, content)."""
    call = f"call-{ident}"
    doc = {
        "$schemaVersion": "1.13",
        "current_agent": {"name": f"agent-{ident}"},
        "original_input": _prompt(text),
        "context": {"note": text, "api_key": text},
        "session_items": [
            {"type": "message_output_item", "agent": {"name": f"agent-{ident}"},
             "raw_item": {"type": "message", "role": "assistant", "id": f"msg-{ident}",
                          "content": [{"type": "output_text", "text": text}]}},
            {"type": "reasoning_item", "raw_item": {"type": "reasoning",
                                                    "summary": [{"type": "x", "text": text}]}},
            {"type": "tool_call_item", "raw_item": {"type": "function_call", "call_id": call,
             "name": "run", "id": f"fc-{ident}", "arguments": json.dumps({"cmd": text})}},
            {"type": "tool_call_output_item", "raw_item": {"type": "function_call_output",
             "call_id": call, "output": json.dumps({"o": json.dumps({"k": text})})}},
        ],
    }  # fmt: skip
    return f"runstate-{ident}.json", json.dumps(doc)


#: Every third-party format, by the name the tests use (the agentops export is built
#: from an imported Claude Code session, see the test).
FORMATS = {
    "claude_code": claude_code,
    "codex_cli": codex_cli,
    "google_adk": google_adk,
    "openai_chat": openai_chat,
    "swe_agent": swe_agent,
    "run_state": run_state,
}
