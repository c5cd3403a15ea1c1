"""An OpenAI-compatible HTTP test server with scripted replies and injectable faults.

It serves ``POST /v1/chat/completions`` (JSON, or server-sent events with ``"stream": true``),
``GET /v1/models`` and vLLM's runtime adapter routes ``POST /v1/load_lora_adapter`` /
``/v1/unload_lora_adapter`` (``{"lora_name", "lora_path"}``; the loaded adapters are listed in
:attr:`TestServer.lora_adapters`; replies do not depend on them) on 127.0.0.1, from a
``ThreadingHTTPServer`` in a background thread::

    with TestServer(replies=["Hello!", "Bye."]) as server:
        backend = make_backend("openai:test-model", base_url=server.url)
        server.set_faults(["429", "500"])          # the next two chat requests fail
        ...
        assert server.request_count == 3

Replies come from a list (handed out in order, then echo), a callable ``f(body) -> str`` (the
parsed request body), or echo (the default): ``"echo: <last user message>"``. ``max_tokens``
(whitespace tokens) and ``stop`` are applied to the reply; ``n`` returns that many choices.

Faults (strings or :class:`Fault`), consumed one per chat request after :meth:`set_faults`:

==================  ==========================================================================
``"429[:S]"``       429 with ``Retry-After: S`` (default 0)
``"500"``, ``"503"`` that status (any ``"status:CODE"`` too; 4xx are not retried by clients)
``"timeout[:S]"``   sleep S seconds (default 5) before answering — past the client's timeout
``"malformed"``     200 with a body that is not JSON
``"truncate"``      close the connection in the middle of the body (of the SSE stream)
``"disconnect"``    close the connection without any response
``"ok"`` / None     answer normally
==================  ==========================================================================

Run from a shell (prints the base URL on the first line)::

    python -m dialogue_gym.testing.server --port 0 --fail-first 2 --fault 429:0.1
"""

from __future__ import annotations

from dialogue_gym.testing.server.app import TestServer
from dialogue_gym.testing.server.cli import main
from dialogue_gym.testing.server.records import Fault, RequestRecord

__all__ = ["Fault", "RequestRecord", "TestServer", "main"]
