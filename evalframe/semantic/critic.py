"""LLM critics (seed 000 §8): the abstract :class:`LLMCritic` and :class:`OpenAICompatibleCritic`
for any server that speaks the chat completions API (OpenAI, vLLM, Ollama, llama.cpp server).

:meth:`LLMCritic.judge_all` is how metrics ask: the prompts' unique cache keys are looked up in
the critic's cache (:mod:`evalframe.semantic.judge_cache`); in ``replay`` mode every miss is
listed in one :class:`~evalframe.errors.ConfigError` (exit 2) before any call; otherwise the
misses are asked with at most ``max_concurrency`` requests in flight (threads; a progress bar
shows calls, cache hits and failures), parsed (:mod:`evalframe.semantic.parsing`) and, in
``record`` mode, written to the cache. :attr:`LLMCritic.stats` counts calls, hits, retries and
failures by kind for run.json's ``judge`` section.

The API key is sent in the ``Authorization`` header and nowhere else: it is not part of the
cache key, the cache, ``repr``, ``stats`` or any message (texts from the server are redacted).
"""

from __future__ import annotations

import json
import os
import threading
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalframe._progress import Progress
from evalframe.errors import ConfigError
from evalframe.semantic.judge_cache import Entry, JudgeCache, Mode, cache_key, check_mode
from evalframe.semantic.parsing import CALL_FAILURE, PARSE_FAILURE, parse_score

#: Replay misses listed one by one in the error (the rest are counted).
MAX_LISTED_MISSES = 20


class JudgeParseError(ValueError):
    """The judge's answer has no score (its text in ``answer``)."""

    def __init__(self, answer: str):
        super().__init__("the judge's answer has no score")
        self.answer = answer


class JudgeCallError(RuntimeError):
    """A call failed for good (after its retries); ``kind`` names the failure (``http_400``, ``timeout``)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Request:
    """One question to the judge: the prompt, what it is about (for messages) and the template's hash."""

    prompt: str
    metadata: Mapping[str, Any]
    template_sha256: str


@dataclass(frozen=True)
class Verdict:
    """A judged sample: the score in [0, 1] or None with the reason, and the raw answer."""

    score: float | None
    reason: str | None
    answer: str | None


class LLMCritic(ABC):
    """Scores a prompt with an LLM (seed 000 §8): subclasses implement :meth:`score`.

    A subclass may override :meth:`answer` instead, to return the model's raw text (which the
    metric then parses on its ``scale``). ``provider``, ``model`` and :meth:`parameters` make the
    cache key; ``cache`` (a path or :class:`JudgeCache`) and ``mode`` say how the cache is used.
    """

    provider: str = "custom"
    max_concurrency: int = 1

    def __init__(self, *, model: str | None = None, cache: str | Path | JudgeCache | None = None, mode: str = "record"):
        self.model = model or type(self).__name__
        self.cache = cache if isinstance(cache, JudgeCache) or cache is None else JudgeCache(cache)
        self.mode: Mode = check_mode(mode)
        self.stats: Counter[str] = Counter()
        self._stats_lock = threading.Lock()
        #: Verdicts already given in this process, by cache key (a metric's second look asks nothing).
        self._known: dict[str, Verdict] = {}

    def __deepcopy__(self, memo: dict) -> LLMCritic:
        return self  # a critic is a connection, not a value: metrics copied for reports share it

    @abstractmethod
    def score(self, prompt: str, metadata: Mapping[str, Any] | None = None) -> float:
        """A numeric score for ``prompt`` (typically in [0, 1] or [1, 5]); raise
        :class:`JudgeParseError` when the model's answer has none."""

    def answer(self, prompt: str, metadata: Mapping[str, Any] | None = None) -> str:
        """The raw answer to ``prompt`` (default: the text of :meth:`score`)."""
        return repr(float(self.score(prompt=prompt, metadata=metadata)))

    def parameters(self) -> dict[str, Any]:
        """The call parameters that change answers (temperature, seed); part of the cache key."""
        return {}

    def count(self, name: str, amount: int = 1) -> None:
        with self._stats_lock:
            self.stats[name] += amount

    def describe(self) -> dict[str, Any]:
        """The critic for run.json (never its key)."""
        return {"provider": self.provider, "model": self.model, "mode": self.mode,
                "cache": str(self.cache.path) if self.cache is not None else None, "parameters": self.parameters()}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(provider={self.provider!r}, model={self.model!r}, mode={self.mode!r})"

    # --- asking many ---------------------------------------------------------------------------

    def _key(self, request: Request, scale: tuple[float, float]) -> str:
        return cache_key(self.provider, self.model, request.prompt, {**self.parameters(), "scale": list(scale)},
                         request.template_sha256)

    def _ask(self, request: Request, scale: tuple[float, float]) -> Verdict:
        try:
            text = self.answer(prompt=request.prompt, metadata=request.metadata)
        except JudgeParseError as error:
            self.count("calls")
            self.count(f"failures.{PARSE_FAILURE}")
            return Verdict(None, PARSE_FAILURE, error.answer)
        except JudgeCallError as error:
            self.count("calls")
            self.count(f"failures.{error.kind}")
            return Verdict(None, CALL_FAILURE, None)
        self.count("calls")
        score, reason = parse_score(text, scale)
        if reason is not None:
            self.count(f"failures.{reason}")
        return Verdict(score, reason, text)

    def judge_all(self, requests: Sequence[Request], *, scale: tuple[float, float] = (0.0, 1.0), label: str = "judge") -> list[Verdict]:
        """A verdict per request: from the cache, else from the judge (module docstring)."""
        keys = [self._key(request, scale) for request in requests]
        found: dict[str, Verdict] = {}
        misses: dict[str, Request] = {}
        for key, request in zip(keys, requests, strict=True):
            if key in found or key in misses:
                continue
            if key in self._known:
                found[key] = self._known[key]
                continue
            entry = self.cache.get(key) if self.cache is not None else None
            if entry is not None:
                found[key] = Verdict(entry.score, entry.reason, entry.answer)
                self.count("hits")
                if entry.reason is not None:
                    self.count(f"failures.{entry.reason}")
            else:
                misses[key] = request
        if misses and self.mode == "replay":
            raise ConfigError(replay_misses(list(misses.values()), label, self.cache))
        if misses:
            self._ask_all(misses, found, scale, label)
        self._known.update(found)
        return [found[key] for key in keys]

    def _ask_all(self, misses: dict[str, Request], found: dict[str, Verdict], scale: tuple[float, float], label: str) -> None:
        workers = max(1, int(self.max_concurrency))
        def detail() -> str:
            failures = sum(n for name, n in self.stats.items() if name.startswith("failures."))
            return f"calls {self.stats['calls']}, hits {self.stats['hits']}, failures {failures}"
        try:
            with Progress(len(misses), f"{label}", detail=detail) as progress, ThreadPoolExecutor(max_workers=workers) as pool:
                futures = {key: pool.submit(self._ask, request, scale) for key, request in misses.items()}
                for key, future in futures.items():
                    verdict = found[key] = future.result()
                    progress.advance()
                    if self.cache is not None and self.mode == "record" and verdict.reason != CALL_FAILURE:
                        request = misses[key]
                        self.cache.put(key, Entry(verdict.answer or "", verdict.score, verdict.reason),
                                       provider=self.provider, model=self.model, template_sha256=request.template_sha256,
                                       parameters=json.dumps({**self.parameters(), "scale": list(scale)}, sort_keys=True),
                                       prompt=request.prompt)
        finally:
            if self.cache is not None and self.mode == "record":
                self.cache.flush()


def replay_misses(misses: Sequence[Request], label: str, cache: JudgeCache | None) -> str:
    """The replay error: every prompt the cache lacks (what it is about), at most a screenful."""
    where = f"the judge cache {cache.path}" if cache is not None else "no judge cache"
    lines = [f"--judge replay: {len(misses)} prompt{'s' if len(misses) != 1 else ''} of `{label}` not in {where} "
             "(run once with --judge record to fill it):"]
    for request in misses[:MAX_LISTED_MISSES]:
        about = ", ".join(f"{k} {v}" for k, v in request.metadata.items())
        lines.append(f"  - {about}")
    if len(misses) > MAX_LISTED_MISSES:
        lines.append(f"  … and {len(misses) - MAX_LISTED_MISSES} more")
    return "\n".join(lines)


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (seconds, or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        import email.utils

        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed is not None else None


class OpenAICompatibleCritic(LLMCritic):
    """A critic on any chat completions server: ``POST {base_url}/chat/completions``.

    ``base_url``, ``model`` and ``api_key`` come from the arguments, else from ``OPENAI_BASE_URL``,
    ``EVALFRAME_JUDGE_MODEL`` and ``EVALFRAME_JUDGE_API_KEY`` (else ``OPENAI_API_KEY``; a local
    server may need none). Calls use ``temperature`` 0 and a ``seed``; each has a ``timeout``;
    a 429, a 5xx, a timeout or a refused connection is retried up to ``max_retries`` times after
    ``backoff · 2^attempt`` seconds (capped at ``max_backoff``), or after the server's
    Retry-After when it says longer. At most ``max_concurrency`` requests are in flight.
    """

    provider = "openai-compatible"

    def __init__(self, model: str | None = None, *, base_url: str | None = None, api_key: str | None = None,
                 cache: str | Path | JudgeCache | None = None, mode: str = "record", temperature: float = 0.0,
                 seed: int | None = 0, max_tokens: int | None = 256, timeout: float = 60.0, max_retries: int = 5,
                 backoff: float = 1.0, max_backoff: float = 60.0, max_concurrency: int = 8,
                 system_prompt: str | None = None):
        model = model or os.environ.get("EVALFRAME_JUDGE_MODEL")
        if not model:
            raise ConfigError("the LLM judge needs a model: pass `model=` or set EVALFRAME_JUDGE_MODEL")
        super().__init__(model=model, cache=cache, mode=mode)
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/")
        self._api_key = api_key or os.environ.get("EVALFRAME_JUDGE_API_KEY") or os.environ.get("OPENAI_API_KEY")
        if int(max_concurrency) < 1:
            raise ConfigError(f"max_concurrency must be at least 1, got {max_concurrency!r}")
        self.temperature, self.seed, self.max_tokens = temperature, seed, max_tokens
        self.timeout, self.max_retries, self.backoff, self.max_backoff = timeout, max_retries, backoff, max_backoff
        self.max_concurrency = int(max_concurrency)
        self.system_prompt = system_prompt
        #: Requests in flight now, and the most seen at once (tests check the bound).
        self.in_flight = 0
        self.max_in_flight = 0
        self._flight_lock = threading.Lock()

    def parameters(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "seed": self.seed, "max_tokens": self.max_tokens,
                "system_prompt": self.system_prompt}

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "base_url": self.base_url, "max_concurrency": self.max_concurrency,
                "timeout": self.timeout, "max_retries": self.max_retries}

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "[redacted]") if self._api_key else text

    def _body(self, prompt: str) -> bytes:
        messages = ([{"role": "system", "content": self.system_prompt}] if self.system_prompt else []) + \
                   [{"role": "user", "content": prompt}]
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": self.temperature}
        if self.seed is not None:
            body["seed"] = self.seed
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        return json.dumps(body).encode("utf-8")

    def _post(self, prompt: str) -> dict[str, Any]:
        """One call, retried on 429, 5xx, timeouts and refused connections."""
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        url = f"{self.base_url}/chat/completions"
        body = self._body(prompt)
        import urllib.error  # here: urllib.request costs a tenth of a second to import
        import urllib.request

        for attempt in range(self.max_retries + 1):
            wait: float | None = None
            try:
                with self._flight():
                    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
                    with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 (the user's server)
                        return json.loads(response.read().decode("utf-8"))
            except urllib.error.HTTPError as error:
                status = error.code
                if status != 429 and status < 500:
                    detail = self._redact(error.read().decode("utf-8", "replace")[:200])
                    raise JudgeCallError(f"http_{status}", f"{url}: HTTP {status}: {detail}") from None
                kind, wait = f"http_{status}", _retry_after(error.headers.get("Retry-After"))
            except (TimeoutError, urllib.error.URLError, ConnectionError) as error:
                kind = "timeout" if isinstance(error, TimeoutError) or "timed out" in str(error) else "connection"
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise JudgeCallError("bad_response", f"{url}: the answer is not JSON") from None
            if attempt == self.max_retries:
                raise JudgeCallError(kind, f"{url}: {kind} after {self.max_retries + 1} attempts")
            self.count("retries")
            delay = min(self.max_backoff, self.backoff * 2 ** attempt)
            time.sleep(max(delay, wait) if wait is not None else delay)
        raise AssertionError("unreachable")

    def _flight(self):
        critic = self

        class _InFlight:
            def __enter__(self):
                with critic._flight_lock:
                    critic.in_flight += 1
                    critic.max_in_flight = max(critic.max_in_flight, critic.in_flight)

            def __exit__(self, *exc):
                with critic._flight_lock:
                    critic.in_flight -= 1
        return _InFlight()

    def answer(self, prompt: str, metadata: Mapping[str, Any] | None = None) -> str:
        found = self._post(prompt)
        try:
            content = found["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise JudgeCallError("bad_response", f"{self.base_url}: the answer has no choices[0].message.content") from None
        return content if isinstance(content, str) else json.dumps(content)

    def score(self, prompt: str, metadata: Mapping[str, Any] | None = None) -> float:
        text = self.answer(prompt=prompt, metadata=metadata)
        value, reason = parse_score(text)
        if value is None:
            raise JudgeParseError(text)
        return value
