"""Thin HTTP GET with a timeout, retries with exponential back-off and jitter, clear errors.

Every ingest fetcher goes through :func:`get`.  A transport error, a timeout or an HTTP
status in :data:`RETRY_STATUS` is retried ``retries`` times, sleeping
``backoff_s * 2**attempt`` plus up to 50 % random jitter (capped at ``max_backoff_s``).
Other 4xx statuses fail at once.  Failure raises :class:`FetchError` naming the URL, the
attempts and the last cause; fetchers turn it into a result object instead of crashing.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import requests

log = logging.getLogger(__name__)

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
DEFAULT_TIMEOUT_S = 5.0
DEFAULT_RETRIES = 2
DEFAULT_BACKOFF_S = 0.2


class FetchError(RuntimeError):
    """A fetch failed after all attempts.  ``attempts`` and ``status`` say how."""

    def __init__(self, message: str, *, attempts: int, status: int | None = None) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.status = status


@dataclass
class Response:
    """What :func:`get` returns: body text, status, how many attempts it took."""

    url: str
    status: int
    text: str
    attempts: int
    elapsed_s: float


def backoff_delay_s(attempt: int, backoff_s: float, max_backoff_s: float, rng: random.Random | None = None) -> float:
    """Sleep before retry ``attempt`` (0-based): ``backoff_s·2^attempt`` + ≤50 % jitter, capped."""
    base = min(max_backoff_s, backoff_s * (2**attempt))
    jitter = (rng or random).uniform(0.0, 0.5 * base)
    return min(max_backoff_s, base + jitter)


def get(
    url: str,
    *,
    params: dict | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    retries: int = DEFAULT_RETRIES,
    backoff_s: float = DEFAULT_BACKOFF_S,
    max_backoff_s: float = 5.0,
    session: requests.Session | None = None,
    auth: tuple[str, str] | None = None,
    verify: bool | str = True,
    headers: dict | None = None,
    accept_status: frozenset[int] = frozenset({200}),
    sleep: Callable[[float], None] = time.sleep,
) -> Response:
    """GET ``url`` and return the body, retrying transient failures (see module docstring).

    ``accept_status`` lists statuses returned rather than raised (the Prometheus API
    answers 400/422/503 with a JSON error body worth reading).
    """
    http = session or requests
    start = time.monotonic()
    last_cause = ""
    status: int | None = None
    attempts = 0
    for attempt in range(retries + 1):
        attempts = attempt + 1
        try:
            r = http.get(url, params=params, timeout=timeout_s, auth=auth, verify=verify, headers=headers)
        except requests.Timeout:
            last_cause, status = f"timed out after {timeout_s:g} s", None
        except requests.ConnectionError as exc:
            last_cause, status = f"connection failed ({type(exc).__name__}: {exc})", None
        except requests.RequestException as exc:
            raise FetchError(f"GET {url}: invalid request: {exc}", attempts=attempts) from exc
        else:
            status = r.status_code
            if status in accept_status:
                return Response(url, status, r.text, attempts, time.monotonic() - start)
            last_cause = f"HTTP {status} {r.reason or ''}".strip()
            if status not in RETRY_STATUS:
                break
        if attempt < retries:
            delay = backoff_delay_s(attempt, backoff_s, max_backoff_s)
            log.debug("GET %s failed (%s); retry %d in %.2f s", url, last_cause, attempt + 1, delay)
            sleep(delay)
    raise FetchError(f"GET {url} failed after {attempts} attempt(s): {last_cause}", attempts=attempts, status=status)
