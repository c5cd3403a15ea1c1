"""The test server's command line: ``python -m dialogue_gym.testing.server``."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from dialogue_gym.testing.server.app import TestServer

__all__ = ["main"]

# The --help description (the first line of the package's docstring).
DESCRIPTION = "An OpenAI-compatible HTTP test server with scripted replies and injectable faults."


def _read_replies(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        data = json.loads(text)
    except ValueError:
        return [line for line in text.splitlines() if line.strip()]
    if not isinstance(data, list):
        raise SystemExit(f"{path}: expected a JSON list of strings or one reply per line")
    return [str(x) for x in data]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the test server until interrupted (prints the base URL, then one JSON line)."""
    parser = argparse.ArgumentParser(
        prog="python -m dialogue_gym.testing.server", description=DESCRIPTION
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--model", default="test-model")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per chat request")
    parser.add_argument("--stream-chunk-delay", type=float, default=0.0)
    parser.add_argument(
        "--replies", metavar="FILE", help="JSON list or one reply per line (default: echo)"
    )
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="SPEC",
        help="429[:retry_after], 500, status:CODE, timeout[:s], malformed, truncate, disconnect."
        " Once: every chat request (or the first N with --fail-first); repeated: one fault per"
        " request for the first requests, then none",
    )
    parser.add_argument(
        "--fail-first",
        type=int,
        default=None,
        metavar="N",
        help="apply the (single) --fault to the first N chat requests only",
    )
    parser.add_argument(
        "--require-api-key-env",
        metavar="VAR",
        help="answer 401 unless the bearer token equals $VAR",
    )
    parser.add_argument("--duration", type=float, default=None, help="stop after S seconds")
    args = parser.parse_args(argv)

    import os

    key = os.environ.get(args.require_api_key_env) if args.require_api_key_env else None
    if args.require_api_key_env and not key:
        parser.error(f"environment variable {args.require_api_key_env} is not set")
    faults: Any = None
    if args.fail_first is not None:
        if len(args.fault) != 1:
            parser.error("--fail-first needs exactly one --fault")
        faults = args.fault[0]
    elif len(args.fault) == 1:
        faults = args.fault[0]  # one fault: every request
    elif args.fault:
        faults = list(args.fault)
    server = TestServer(
        _read_replies(args.replies) if args.replies else None,
        model=args.model,
        latency=args.latency,
        require_api_key=key,
        host=args.host,
        port=args.port,
        stream_chunk_delay=args.stream_chunk_delay,
    )
    server.set_faults(faults, fail_first=args.fail_first)
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with server:
        print(server.url, flush=True)
        print(json.dumps({"url": server.url, "port": server.port, "model": args.model}), flush=True)
        stop.wait(args.duration)
    print(json.dumps({"requests": server.request_count}), file=sys.stderr, flush=True)
    return 0
