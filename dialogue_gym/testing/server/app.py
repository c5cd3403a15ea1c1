"""The test server: :class:`TestServer` (state, faults, replies) and its HTTP request handler.

The handler speaks the OpenAI wire format (JSON and server-sent events) and reads the server's
state through the methods of :class:`TestServer` marked "used by the handler"; both live here
because they share that state and its lock.
"""

from __future__ import annotations

import inspect
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from dialogue_gym.testing.server.records import Fault, RequestRecord

__all__ = ["Responder", "TestServer"]


Responder = Callable[[dict[str, Any]], str]


@dataclass
class _State:
    replies: list[str] = field(default_factory=list)
    responder: Responder | None = None
    faults: dict[int, Fault] = field(default_factory=dict)
    fault_fn: Callable[..., Fault | str | None] | None = None
    chat_count: int = 0  # chat requests since the last set_faults (fault schedule index)


def _takes_two(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in positional)


def _last_user(messages: Any) -> str:
    if isinstance(messages, list):
        for message in reversed(messages):
            if isinstance(message, Mapping) and message.get("role") == "user":
                content = message.get("content", "")
                return content if isinstance(content, str) else json.dumps(content)
    return ""


def _word_count(messages: Any) -> int:
    if not isinstance(messages, list):
        return 0
    return sum(len(str(m.get("content", "")).split()) for m in messages if isinstance(m, Mapping))


class _Server(ThreadingHTTPServer):
    """A threading HTTP server whose listen backlog takes a burst of clients.

    ``socketserver``'s backlog of 5 overflows when 16 clients connect at once (a vector env's
    sub-envs all request in the same step): the kernel then resets some of the connections,
    and the clients log retries that no real endpoint would have caused.
    """

    request_queue_size = 128


class TestServer:
    """A real OpenAI-compatible HTTP server on 127.0.0.1 for tests and benchmarks.

    Args:
        replies: A list of reply texts (served in order, then echo), a callable
            ``f(body) -> str`` of the parsed request body, or ``None`` for echo.
        model: Model id reported by ``/v1/models`` (any requested model is accepted).
        latency: Seconds each chat request waits before answering (a number, or a callable
            of the request index).
        faults: Initial fault schedule (see :meth:`set_faults`).
        require_api_key: When set, requests without ``Authorization: Bearer <key>`` get 401.
        host: Interface (``127.0.0.1``).
        port: Port (0: any free port).
        stream_chunk_delay: Seconds between SSE chunks.

    Attributes:
        requests: Every request received, in arrival order.
    """

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        replies: Sequence[str] | Responder | None = None,
        *,
        model: str = "test-model",
        latency: float | Callable[[int], float] = 0.0,
        faults: Any = None,
        require_api_key: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        stream_chunk_delay: float = 0.0,
    ) -> None:
        self.model = model
        self.latency = latency
        self.host = host
        self.port = port
        self.stream_chunk_delay = float(stream_chunk_delay)
        self._require_key = require_api_key
        self.requests: list[RequestRecord] = []
        self.lora_adapters: dict[str, str] = {}
        """Adapters loaded through ``/v1/load_lora_adapter``: name → path."""
        self._lock = threading.Lock()
        self._state = _State()
        self.set_replies(replies)
        self.set_faults(faults)
        self._in_flight = 0
        self.max_in_flight = 0
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> TestServer:
        """Bind and serve in a daemon thread; returns ``self``."""
        if self._httpd is not None:
            return self
        handler = type("_BoundHandler", (_Handler,), {"server_ref": self})
        httpd = _Server((self.host, self.port), handler)
        httpd.daemon_threads = True
        httpd.block_on_close = False
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self._stopping.clear()
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving (sleeping handlers wake up and drop their connections)."""
        self._stopping.set()
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> TestServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """Base URL for OpenAI clients: ``http://127.0.0.1:PORT/v1``."""
        if self._httpd is None:
            raise RuntimeError("the server is not running; use start() or a with block")
        return f"http://{self.host}:{self.port}/v1"

    # -- configuration --------------------------------------------------------------------------

    def set_replies(self, replies: Sequence[str] | Responder | None) -> None:
        """Replace the reply script (a list, a callable of the body, or ``None`` for echo)."""
        with self._lock:
            if replies is None:
                self._state.replies, self._state.responder = [], None
            elif callable(replies):
                self._state.replies, self._state.responder = [], replies
            elif isinstance(replies, str):
                raise TypeError("replies must be a list of strings, not a string")
            else:
                self._state.replies, self._state.responder = [str(r) for r in replies], None

    def set_faults(
        self,
        faults: Sequence[str | Fault | None]
        | Mapping[int, str | Fault]
        | Callable[..., Fault | str | None]
        | str
        | Fault
        | None = None,
        *,
        fail_first: int | None = None,
    ) -> None:
        """Set the fault schedule of the coming chat requests (counted from this call).

        Args:
            faults: A list (the i-th coming chat request gets ``faults[i]``, later ones
                none), a dict ``{i: fault}``, a callable ``f(i) -> fault`` or
                ``f(i, body) -> fault`` (``body``: the parsed request), one fault (applied
                to every request, or to the first ``fail_first``), or ``None`` (no faults).
            fail_first: With a single fault: apply it to the first ``fail_first`` requests
                only (``set_faults("429", fail_first=2)``).
        """
        state = _State(replies=self._state.replies, responder=self._state.responder)
        if faults is None:
            pass
        elif isinstance(faults, (str, Fault)):
            fault = Fault.parse(faults)
            if fail_first is None:
                state.fault_fn = lambda i: fault
            else:
                state.faults = dict.fromkeys(range(fail_first), fault)
        elif callable(faults):
            state.fault_fn = faults
        elif isinstance(faults, Mapping):
            state.faults = {int(i): Fault.parse(f) for i, f in faults.items()}
        else:
            state.faults = {i: Fault.parse(f) for i, f in enumerate(faults)}
        with self._lock:
            self._state = state

    def reset(self) -> None:
        """Forget the request log and counters (replies and faults are kept)."""
        with self._lock:
            self.requests.clear()
            self.max_in_flight = 0

    # -- counters -------------------------------------------------------------------------------

    @property
    def request_count(self) -> int:
        """Requests received (all paths)."""
        with self._lock:
            return len(self.requests)

    @property
    def chat_requests(self) -> list[RequestRecord]:
        """The ``/chat/completions`` requests received."""
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def in_flight(self) -> int:
        """Chat requests being handled now."""
        with self._lock:
            return self._in_flight

    # -- used by the handler --------------------------------------------------------------------

    def _begin(self, method: str, path: str, authorized: bool) -> RequestRecord:
        with self._lock:
            record = RequestRecord(
                index=len(self.requests),
                method=method,
                path=path,
                authorized=authorized,
                started=time.monotonic(),
            )
            self.requests.append(record)
            return record

    def _enter_chat(self, body: dict[str, Any]) -> tuple[Fault, int]:
        with self._lock:
            i = self._state.chat_count
            self._state.chat_count += 1
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            if self._state.fault_fn is not None:
                fn = self._state.fault_fn
                fault = Fault.parse(fn(i, body) if _takes_two(fn) else fn(i))
            else:
                fault = self._state.faults.get(i, Fault())
            return fault, i

    def _leave_chat(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _reply_text(self, body: dict[str, Any]) -> str:
        with self._lock:
            responder = self._state.responder
            scripted = self._state.replies.pop(0) if self._state.replies else None
        if responder is not None:
            return str(responder(body))
        if scripted is not None:
            return scripted
        return f"echo: {_last_user(body.get('messages'))}"

    def _latency(self, index: int) -> float:
        return float(self.latency(index) if callable(self.latency) else self.latency)

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless the server stops; returns whether it is still running."""
        if seconds > 0:
            return not self._stopping.wait(seconds)
        return not self._stopping.is_set()

    def _check_key(self, header: str | None) -> bool:
        if self._require_key is None:
            return True
        return header == f"Bearer {self._require_key}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "dialogue-gym-test/1.0"
    server_ref: TestServer
    timeout = 30

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log."""

    # -- responses ------------------------------------------------------------------------------

    def _send_json(
        self, status: int, payload: Any, headers: Mapping[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _error(
        self, status: int, message: str, kind: str, headers: Mapping[str, str] | None = None
    ) -> None:
        self._send_json(
            status,
            {"error": {"message": message, "type": kind, "param": None, "code": None}},
            headers,
        )

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.wfile.flush()
        finally:
            self.connection.shutdown(2)  # both directions: the client sees EOF at once

    # -- routing --------------------------------------------------------------------------------

    def do_GET(self) -> None:
        """``GET /v1/models`` (and ``/v1/models/{id}``)."""
        srv = self.server_ref
        record = srv._begin("GET", self.path, self.headers.get("Authorization") is not None)
        try:
            if not srv._check_key(self.headers.get("Authorization")):
                record.status = 401
                self._error(401, "Incorrect API key provided.", "invalid_request_error")
            elif self.path.rstrip("/") in ("/v1/models", "/models"):
                record.status = 200
                self._send_json(200, {"object": "list", "data": [self._model_card()]})
            elif self.path.startswith(("/v1/models/", "/models/")):
                record.status = 200
                self._send_json(200, self._model_card(self.path.rsplit("/", 1)[-1]))
            else:
                record.status = 404
                self._error(404, f"no route {self.path}", "not_found")
        finally:
            record.finished = time.monotonic()

    def _model_card(self, model: str | None = None) -> dict[str, Any]:
        return {
            "id": model or self.server_ref.model,
            "object": "model",
            "created": 0,
            "owned_by": "dialogue-gym",
        }

    def do_POST(self) -> None:
        """``POST /v1/chat/completions``."""
        srv = self.server_ref
        record = srv._begin("POST", self.path, self.headers.get("Authorization") is not None)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            record.body = json.loads(raw) if raw else None
        except ValueError:
            record.body = None
        try:
            route = self.path.rstrip("/")
            if route in ("/v1/load_lora_adapter", "/v1/unload_lora_adapter"):
                self._lora(record, route)
                return
            if route not in ("/v1/chat/completions", "/chat/completions"):
                record.status = 404
                self._error(404, f"no route {self.path}", "not_found")
                return
            if not srv._check_key(self.headers.get("Authorization")):
                record.status = 401
                self._error(401, "Incorrect API key provided.", "invalid_request_error")
                return
            if not isinstance(record.body, dict) or not isinstance(
                record.body.get("messages"), list
            ):
                record.status = 400
                self._error(400, "body must be JSON with a 'messages' list", "invalid_request")
                return
            fault, index = srv._enter_chat(record.body)
            record.fault = fault.kind if fault.kind != "status" else str(fault.status)
            try:
                self._chat(record, record.body, fault, index)
            finally:
                srv._leave_chat()
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True
        finally:
            record.finished = time.monotonic()

    def _lora(self, record: RequestRecord, route: str) -> None:
        """Loads (name + path) or unloads (name) an adapter, as vLLM does.

        The record's status is set before the response goes out, so a client that has its
        answer finds it logged.
        """
        srv = self.server_ref
        body = record.body if isinstance(record.body, dict) else {}
        name, path = body.get("lora_name"), body.get("lora_path")
        unload = route.endswith("/unload_lora_adapter")
        if not isinstance(name, str) or not name or not (unload or isinstance(path, str)):
            record.status = 400
            self._error(400, "body must be JSON with 'lora_name' (and 'lora_path')", "invalid")
            return
        with srv._lock:
            known = name in srv.lora_adapters
            if unload:
                srv.lora_adapters.pop(name, None)
            else:
                srv.lora_adapters[name] = str(path)
        if unload and not known:
            record.status = 404
            self._error(404, f"no adapter named {name!r} is loaded", "not_found")
            return
        payload = f"Success: LoRA adapter '{name}' {'removed' if unload else 'added'}.".encode()
        record.status = 200
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _chat(self, record: RequestRecord, body: dict[str, Any], fault: Fault, index: int) -> None:
        srv = self.server_ref
        if not srv._sleep(srv._latency(index)):
            return self._drop()
        if fault.kind == "timeout":
            if not srv._sleep(fault.delay):
                return self._drop()
        elif fault.kind == "disconnect":
            return self._drop()
        elif fault.kind == "status":
            record.status = fault.status
            headers = {}
            if fault.retry_after is not None:
                headers["Retry-After"] = f"{fault.retry_after:g}"
            kind = "rate_limit_exceeded" if fault.status == 429 else "server_error"
            return self._error(fault.status, f"injected fault {fault.status}", kind, headers)
        elif fault.kind == "malformed":
            record.status = 200
            data = b'{"id": "chatcmpl-broken", "choices": [{"message": {"content": "unterminated'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return None

        n = body.get("n") or 1
        max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
        stop = body.get("stop") or []
        stop = [stop] if isinstance(stop, str) else list(stop)
        choices = []
        for _ in range(int(n)):
            text = srv._reply_text(body)
            cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=-1)
            finish = "stop"
            if cut >= 0:
                text = text[:cut]
            if max_tokens is not None and len(text.split()) > int(max_tokens):
                text, finish = " ".join(text.split()[: int(max_tokens)]), "length"
            choices.append((text, finish))
        prompt_tokens = _word_count(body.get("messages"))
        completion_tokens = sum(len(t.split()) for t, _ in choices)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        model = str(body.get("model") or srv.model)
        cid = f"chatcmpl-test-{record.index}"
        record.status = 200
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return self._stream(cid, model, choices, usage if include_usage else None, fault)
        if fault.kind == "truncate":
            data = json.dumps(self._completion(cid, model, choices, usage)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            return self._drop()
        self._send_json(200, self._completion(cid, model, choices, usage))
        return None

    @staticmethod
    def _completion(
        cid: str, model: str, choices: list[tuple[str, str]], usage: dict[str, int]
    ) -> dict[str, Any]:
        return {
            "id": cid,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": i,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": finish,
                    "logprobs": None,
                }
                for i, (text, finish) in enumerate(choices)
            ],
            "usage": usage,
        }

    def _stream(
        self,
        cid: str,
        model: str,
        choices: list[tuple[str, str]],
        usage: dict[str, int] | None,
        fault: Fault,
    ) -> None:
        srv = self.server_ref
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def chunk_of(index: int, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
            return {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": index, "delta": delta, "finish_reason": finish}],
            }

        events: list[dict[str, Any] | str] = []
        for i, (text, finish) in enumerate(choices):
            events.append(chunk_of(i, {"role": "assistant", "content": ""}, None))
            pieces = text.split(" ")
            for k, piece in enumerate(pieces):
                if piece or k == 0:
                    events.append(chunk_of(i, {"content": piece if k == 0 else " " + piece}, None))
            events.append(chunk_of(i, {}, finish))
        if usage is not None:
            events.append(
                {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [],
                    "usage": usage,
                }
            )
        events.append("[DONE]")
        cut = max(1, len(events) // 2) if fault.kind == "truncate" else None
        for k, event in enumerate(events):
            if cut is not None and k >= cut:
                return self._drop()  # no terminating chunk: the client sees a broken body
            payload = event if isinstance(event, str) else json.dumps(event)
            self._write_chunk(f"data: {payload}\n\n".encode())
            if self.stream_delay and not srv._sleep(self.stream_delay):
                return self._drop()
        self._write_chunk(b"")
        return None

    @property
    def stream_delay(self) -> float:
        return self.server_ref.stream_chunk_delay

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()
