"""Keeping API keys out of every output: URLs with credentials, log lines, error messages.

A key reaches hf-critic from an environment variable (``--api-key-env``, ``OPENAI_API_KEY`` by default) or inside a
base URL (``http://user:KEY@host/v1``, ``https://KEY@host/v1``; the recipe loader expands ``${VAR}`` there). Either
way it must only ever travel in the request's ``Authorization: Bearer`` header:

* :func:`split_url_credentials` takes the key out of a URL, so the HTTP client never sees credentials in the URL
  (httpx would send them as HTTP Basic auth instead of the bearer key, and log the URL with every request);
* :func:`redact_url` writes a URL for humans (reports, cards, messages) with its credentials masked;
* :func:`configure_logging` is the command line's logging set-up (``-v``, ``-vv``): every record its handlers print
  goes through :class:`RedactingFilter`, which masks URL credentials, ``Authorization`` / ``api_key`` values and any
  key registered with :func:`register_secret` (the OpenAI client registers the key it sends), so neither a library's
  request log (httpx, httpcore, openai) nor a traceback can print a key.

Standard library only: cheap to import.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
from typing import TextIO
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = [
    "MASK",
    "RedactingFilter",
    "configure_logging",
    "redact_text",
    "redact_url",
    "register_secret",
    "split_url_credentials",
]

#: What a secret is replaced with.
MASK = "***"
#: Secrets shorter than this are not registered (placeholders such as ``"EMPTY"`` are not keys, and masking a
#: very short string would mangle ordinary text).
MIN_SECRET_LENGTH = 8

_secrets: set[str] = set()
_lock = threading.Lock()
# scheme://userinfo@ : the userinfo of any URL in a text (no "/", "@" or whitespace inside it)
_URL_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/@\s'\"<>]+)@")
# Authorization: Bearer xyz / 'authorization': 'Basic xyz' / api_key='xyz' / "api-key": "xyz" / x-api-key=xyz
_CREDENTIAL_FIELD = re.compile(
    r"(?P<name>\b(?:proxy-)?authorization|\b(?:x-)?api[_-]?key)(?P<sep>['\"]?\s*[:=]\s*(?:\(|b(?=['\"]))?['\"]?)"
    r"(?P<scheme>(?:bearer|basic|token)\s+)?(?P<value>[^\s'\",;)}\]]+)",
    re.IGNORECASE,
)


def register_secret(value: str | None) -> None:
    """Remember ``value`` as a secret: :func:`redact_text` (hence every log line the command line prints) masks it.

    Args:
        value: a key; None, empty and short values (< :data:`MIN_SECRET_LENGTH` characters, e.g. the placeholder
            ``"EMPTY"``) are ignored.

    Source: the OpenAI client calls it with the key it sends (:meth:`hf_critic.backends.openai_client.OpenAIClient`).
    """
    if value and len(value) >= MIN_SECRET_LENGTH:
        with _lock:
            _secrets.add(value)


def redact_text(text: str) -> str:
    """``text`` with every secret masked: the credentials of any URL in it, the values of ``Authorization`` /
    ``api_key`` fields, and every key registered with :func:`register_secret`.

    Args:
        text: any text (a log line, a traceback, an error message).

    Returns:
        The text with each secret replaced by :data:`MASK`; a URL keeps its user name (``http://user:***@host``).
    """
    with _lock:
        secrets = sorted(_secrets, key=len, reverse=True)
    for secret in secrets:
        text = text.replace(secret, MASK)
    text = _URL_USERINFO.sub(lambda m: m["scheme"] + _mask_userinfo(m["userinfo"]) + "@", text)
    return _CREDENTIAL_FIELD.sub(lambda m: m["name"] + m["sep"] + (m["scheme"] or "") + MASK, text)


def _mask_userinfo(userinfo: str) -> str:
    """``user:***`` for ``user:password``; ``***`` for a lone ``KEY`` (``https://KEY@host``: the key itself)."""
    user, sep, _ = userinfo.partition(":")
    return f"{user}:{MASK}" if sep and user and user != MASK else MASK


def redact_url(url: str) -> str:
    """``url`` with its credentials masked, for anything written out: reports, dataset cards, logs, error messages.

    ``http://user:KEY@host/v1`` -> ``http://user:***@host/v1``; ``https://KEY@host/v1`` -> ``https://***@host/v1``
    (a lone user-info is how a key is often written, so it is masked whole). A URL without user-info comes back
    unchanged.

    Args:
        url: the URL.

    Returns:
        The URL, safe to print.
    """
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    userinfo, host = parts.netloc.rsplit("@", 1)
    return parts._replace(netloc=f"{_mask_userinfo(userinfo)}@{host}").geturl()


def split_url_credentials(url: str) -> tuple[str, str | None]:
    """Take the credentials out of a base URL: ``(url without user-info, key or None)``.

    The key is the password of ``user:KEY@host``, or the whole user-info of ``KEY@host`` (percent-escapes decoded).
    The caller sends it as the bearer key, exactly as a key read from the environment, and gives the HTTP client only
    the bare URL.

    Args:
        url: e.g. ``"http://user:sk-abc@127.0.0.1:8000/v1"``.

    Returns:
        ``("http://127.0.0.1:8000/v1", "sk-abc")``; ``(url, None)`` when the URL holds no credentials.
    """
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, sep, password = userinfo.partition(":")
    key = unquote(password if sep and password else user)
    return urlunsplit(parts._replace(netloc=host)), key or None


class RedactingFilter(logging.Filter):
    """A handler filter that redacts each record before any handler formats it: the message with its arguments and
    the traceback text go through :func:`redact_text`. It never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact ``record`` in place (message, arguments, exception and stack text); always True."""
        try:
            message = record.getMessage()
        except Exception:  # a malformed call: logging would print msg and args raw in its error report
            message = f"{record.msg} {record.args}"
        clean = redact_text(message)
        if clean != message or record.args:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_text(record.exc_text)
        if record.stack_info:
            record.stack_info = redact_text(record.stack_info)
        return True


def configure_logging(verbosity: int = 0, stream: TextIO | None = None) -> logging.Logger:
    """The command line's logging set-up: every line the root logger's handlers print is redacted.

    In a fresh process (the root logger has no handler) one handler writing ``LEVEL message`` lines to ``stream`` is
    installed at the level ``verbosity`` asks for. Where handlers exist already (an application embedding
    hf-critic, a test runner), they and the level are left as they are, as :func:`logging.basicConfig` does, and
    only get the :class:`RedactingFilter`.

    Args:
        verbosity: 0 = warnings, 1 (``-v``) = info (httpx then logs each request), 2 or more (``-vv``) = debug.
        stream: where lines go (default: ``sys.stderr`` at the time of the call).

    Returns:
        The root logger.
    """
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
        root.addHandler(handler)
        root.setLevel(logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG)
    for handler in root.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
    return root
