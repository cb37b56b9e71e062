"""Bounded retries of requests to an OpenAI-compatible server, and what its failures become.

:class:`RetryPolicy` says when and how long to wait before retrying a failed attempt (exponential backoff with
jitter, ``Retry-After`` honoured in its three forms: :func:`retry_after`); :class:`Attempts` counts one request's
failed attempts against the policy; :func:`status_error` sorts an HTTP status into retry / fail / stop
(:data:`RETRYABLE_STATUS`, :data:`FATAL_STATUS`); the errors (:class:`FatalAPIError`, :class:`EndpointError`,
:class:`RequestsFailedError`) are one line each and never hold a key. The one retry helper of every HTTP path:
:class:`hf_critic.backends.openai_client.OpenAIClient` (the Eval-Instruct teacher, critics behind a server) and
:class:`hf_critic.backends.pooling.PoolingRewardClient` (reward models behind vLLM's ``/pooling``).
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import BadInputError, ServerError, ServerUnusableError
from ..core.redaction import redact_url

__all__ = [
    "FATAL_STATUS",
    "RETRYABLE_STATUS",
    "Attempts",
    "EndpointError",
    "FatalAPIError",
    "RequestsFailedError",
    "RetryPolicy",
    "ServedReadoutError",
    "retry_after",
    "status_error",
]

RETRYABLE_STATUS = frozenset({408, 409, 425, 429})  # and every 5xx
FATAL_STATUS = frozenset({401, 403, 404})


class FatalAPIError(ServerError):
    """The server refuses every request (401 / 403: credentials; 404: unknown model or endpoint): stop the run.

    The message names the status, the base URL, the model and the environment variable the key is read from, never
    the key itself.
    """


class EndpointError(ServerUnusableError):
    """The server at a base URL cannot be used: down, not OpenAI-compatible, refusing the key, or not serving the
    model asked for.

    Raised by :meth:`OpenAIClient.check` before a run, with a one-line message naming the URL and the model.
    """


class ServedReadoutError(ServerError):
    """Most verdict read-outs from a server put almost no probability on the allowed verdicts (``low_mass``, or the
    verdicts outside its top-k): the read-out is at the wrong position or the top-k too small, so no verdict of the
    run can be trusted. Raised by :meth:`~hf_critic.backends.openai.OpenAIBackend.check_readouts`; the command line
    exits 3 as for other server failures."""


class RequestsFailedError(ServerError):
    """Requests still failed after the client's bounded retries (typically: the server died or stopped answering
    mid-run), so the critic cannot finish. Raised by :class:`OpenAIBackend`.

    The message is one line: how many of how many requests failed, the first error (with its attempt count), the
    base URL (redacted, never the key), and where the answered requests are kept, so that the same command run
    again resumes from them.

    Attributes:
        failed: requests that failed (>= 1).
        total: requests in the batch that was being answered.
        cache: the cache file answered requests are kept in, None when there is none (``--no-cache``).
    """

    def __init__(self, failed: int, total: int, first_error: str, base_url: str, cache: Path | None = None):
        self.failed, self.total, self.cache = failed, total, cache
        if cache:
            kept = f"answered requests are kept in {cache}: run the same command again to resume"
        else:  # --no-cache: claiming a resume would be wrong
            kept = "no cache (--no-cache), so nothing answered is kept: a rerun asks every request again"
        first = " ".join(first_error.split())  # one line, whatever the server's error body held
        super().__init__(
            f"{failed} of {total} request(s) to {redact_url(base_url)} failed after retries (first: {first}); {kept}"
        )


@dataclass(frozen=True)
class RetryPolicy:
    """When and how long to wait before retrying a failed attempt.

    The wait before retry ``k`` (0-based) is ``base = min(max_backoff, initial_backoff * multiplier**k)`` scaled
    by ``1 - jitter * U`` with ``U`` uniform in [0, 1): ``jitter=0`` is plain exponential backoff, ``jitter=1`` is
    "full jitter" (uniform in (0, base]). A ``Retry-After`` header raises the wait to at least its value (capped
    at ``max_backoff``).

    Attributes:
        max_retries: retries after the first attempt on transport errors (>= 0); then the item is reported failed.
        max_invalid_retries: retries of an answer that came back but is cut off (``finish_reason: "length"``) or
            rejected by the caller's check (>= 0); then the item is reported failed, and nothing is cached.
        accept_truncated: keep answers cut off at ``max_tokens`` as they are, the caller's check not applied (for
            generators whose responses are meant to be capped, and the critic: a critique cut off at
            ``--max-new-tokens`` is what that budget gives); the default retries them like rejected answers.
        initial_backoff: seconds before the first retry (> 0).
        max_backoff: cap on any single wait, seconds (>= initial_backoff).
        multiplier: growth factor per retry (>= 1).
        jitter: share of the wait drawn at random, in [0, 1].
        max_total_wait: seconds one request may spend waiting between its attempts in all (> 0); a ``Retry-After``
            beyond it fails the request at once rather than sit silent.
    """

    max_retries: int = 6
    max_invalid_retries: int = 2
    accept_truncated: bool = False
    initial_backoff: float = 1.0
    max_backoff: float = 60.0
    multiplier: float = 2.0
    jitter: float = 1.0
    max_total_wait: float = 300.0

    def __post_init__(self):
        if (
            self.max_retries < 0
            or self.max_invalid_retries < 0
            or self.initial_backoff <= 0
            or self.max_backoff < self.initial_backoff
        ):
            raise BadInputError("need max_retries, max_invalid_retries >= 0 and 0 < initial_backoff <= max_backoff")
        if self.multiplier < 1 or not 0 <= self.jitter <= 1 or not self.max_total_wait > 0:
            raise BadInputError("need multiplier >= 1, jitter in [0, 1] and max_total_wait > 0")

    def delay(self, retry: int, rng: random.Random, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (0-based), in ``(0, max_backoff]``.

        Args:
            retry: how many retries were made before this one.
            rng: source of the jitter.
            retry_after: the server's ``Retry-After`` in seconds, if any.
        """
        base = min(self.max_backoff, self.initial_backoff * self.multiplier**retry)
        wait = base * (1.0 - self.jitter * rng.random())
        if retry_after is not None and retry_after > wait:
            wait = min(self.max_backoff, retry_after)
        return max(wait, 1e-3)


class _Retry(ServerError):
    """One failed attempt that may be retried."""

    def __init__(self, kind: str, detail: str, retry_after: float | None = None):
        super().__init__(detail)
        self.kind, self.detail, self.retry_after = kind, detail, retry_after


class _Fail(ServerError):
    """One failed attempt that must not be retried (the item fails)."""


class Attempts:
    """The failed attempts of one request, counted against a :class:`RetryPolicy`: the one retry loop of every HTTP
    path (the caller attempts, and on a :class:`_Retry` asks :meth:`wait` how long to sleep, None when spent).

    Attributes:
        errors: transport failures so far (retryable statuses, timeouts, lost connections, garbage bodies).
        invalid: answers rejected so far (cut off, or refused by the caller's check).
        last: the last failure's one-line detail.
    """

    def __init__(self, policy: RetryPolicy, rng: random.Random):
        self.policy, self.rng = policy, rng
        self.errors, self.invalid, self.last, self.waited = 0, 0, "no attempt", 0.0

    @property
    def attempts(self) -> int:
        """Attempts made so far (each failure counted once, plus none in flight)."""
        return self.errors + self.invalid

    def wait(self, err: _Retry) -> float | None:
        """Count ``err``; the seconds to wait before the next attempt, or None once ``max_retries`` are spent or the
        waits would pass ``max_total_wait`` (a ``Retry-After`` beyond it gives up at once; :attr:`last` says why)."""
        self.errors += 1
        self.last = err.detail
        if self.errors > self.policy.max_retries:
            return None
        wait = self.policy.delay(self.errors - 1, self.rng, err.retry_after)
        asked = max(wait, err.retry_after or 0.0)
        if self.waited + asked > self.policy.max_total_wait:
            self.last = (
                f"{err.detail}; waiting {asked:g} s more would pass the {self.policy.max_total_wait:g} s a "
                "request may wait in all"
            )
            return None
        self.waited += wait
        return wait

    def rejected(self, reason: str) -> bool:
        """Count a rejected answer; True while another attempt is allowed (``max_invalid_retries``)."""
        self.invalid += 1
        self.last = f"answer rejected: {reason}"
        return self.invalid <= self.policy.max_invalid_retries


def status_error(status: int, detail: str, headers: Mapping[str, str] | None, fatal: str) -> Exception:
    """The exception an HTTP error status becomes: :class:`FatalAPIError` (``fatal``, for 401 / 403 / 404: every
    request would fail), :class:`_Retry` (408 / 409 / 425 / 429 / 5xx, with the server's :func:`retry_after`), else
    :class:`_Fail` (this request alone fails, e.g. a 400)."""
    if status in FATAL_STATUS:
        return FatalAPIError(fatal)
    if status in RETRYABLE_STATUS or status >= 500:
        return _Retry(str(status), detail, retry_after(headers))
    return _Fail(detail)


def retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """The wait the server asks for, in seconds, or None: ``retry-after-ms`` (milliseconds, OpenAI's and Azure's),
    else ``Retry-After`` as delay-seconds or as an HTTP-date (RFC 9110 §10.2.3; a date in the past is 0).

    Args:
        headers: the response headers (any case; an ``httpx.Headers`` or a dict).
        now: the current time (seconds since the epoch) for the date form; default ``time.time()``.

    Returns:
        A finite number >= 0, or None when absent or unreadable.
    """
    lower = {k.lower(): v for k, v in (headers or {}).items()}
    try:
        if "retry-after-ms" in lower:
            value = float(lower["retry-after-ms"]) / 1000
            return value if math.isfinite(value) and value >= 0 else None
    except ValueError:
        pass
    value = lower.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None  # RFC 9110 dates are GMT; a zone-less date is not one
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
