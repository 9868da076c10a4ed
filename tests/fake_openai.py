"""A scripted chat completions server on 127.0.0.1 (random port) for the judge tests and benchmark.

The answer depends on a marker in the prompt's text (the tests put it in a response):

======================  =====================================================================
marker                  answer
======================  =====================================================================
(none)                  ``0.8``
``<json>``              ``{"score": 0.6, "why": "mostly supported"}``
``<scale5>``            ``4``
``<malformed>``         ``I would rather not say.``
``<429>``               HTTP 429 with ``Retry-After: 1`` on the first call of that prompt, then ``0.9``
``<500>``               HTTP 500 on the first two calls of that prompt, then ``0.7``
``<slow>``              ``0.5`` after 0.2 s
======================  =====================================================================

``latency`` delays every answer (the benchmark's 50 ms). The server counts calls (per prompt
too), the requests in flight and the most at once, and keeps every Authorization header.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeOpenAI:
    def __init__(self, latency: float = 0.0):
        self.latency = latency
        self.calls = 0
        self.per_prompt: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        self.authorization: list[str | None] = []
        self.bodies: list[dict] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = body["messages"][-1]["content"]
                with server._lock:
                    server.calls += 1
                    server.per_prompt[prompt] += 1
                    attempt = server.per_prompt[prompt]
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    server.authorization.append(self.headers.get("Authorization"))
                    server.bodies.append(body)
                try:
                    reply = server._answer(prompt, attempt)
                finally:
                    with server._lock:  # before the answer leaves: the client may ask again at once
                        server.in_flight -= 1
                server._send(self, *reply)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def reset(self) -> None:
        with self._lock:
            self.calls, self.max_in_flight = 0, 0
            self.per_prompt.clear()
            self.authorization.clear()
            self.bodies.clear()

    def _answer(self, prompt: str, attempt: int) -> tuple[int, dict, dict]:
        if self.latency:
            time.sleep(self.latency)
        if "<429>" in prompt and attempt == 1:
            return 429, {"error": "slow down"}, {"Retry-After": "1"}
        if "<500>" in prompt and attempt <= 2:
            return 500, {"error": "boom"}, {}
        if "<slow>" in prompt:
            time.sleep(0.2)
        text = "0.8"
        for marker, answer in (("<json>", '{"score": 0.6, "why": "mostly supported"}'), ("<scale5>", "4"),
                               ("<malformed>", "I would rather not say."), ("<429>", "0.9"), ("<500>", "0.7"),
                               ("<slow>", "0.5")):
            if marker in prompt:
                text = answer
                break
        return 200, {"id": "x", "object": "chat.completion",
                     "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}, {}

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, payload: dict, headers: dict | None = None) -> None:
        data = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)
