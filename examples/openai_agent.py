"""Benchmark an LLM agent on an OpenAI-compatible endpoint: the ``openai:MODEL`` agent.

By default this starts the package's local test server (a real OpenAI-compatible HTTP server
on 127.0.0.1) with scripted persuader replies, so it runs offline with no API key. Point it at
any real endpoint (OpenAI, vLLM, Ollama, llama.cpp) instead with ``--base-url`` and ``--model``;
the key is read from ``$OPENAI_API_KEY`` and never written anywhere.

Every request goes through the record/replay cache: the second evaluation replays the first
from the cache file without a single request, with identical results.

The same evaluation from the command line::

    dialogue-gym eval P4G-hard --agent openai:MODEL --base-url http://127.0.0.1:8000/v1

Run: ``python examples/openai_agent.py [--encoder hashing] [--base-url URL --model MODEL]``
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from pathlib import Path
from typing import Any

import dialogue_gym
from dialogue_gym.testing.server import TestServer

# What the "model" behind the test server says: the persuader's next line, chosen by how many
# turns the persuader has had so far (counted in the prompt's <dialogue> block).
SCRIPT = (
    "Persuader: Hi! Thanks for chatting with me. Have you heard of Save the Children?",
    "They help kids in poor countries get food, medicine and schooling, and they have been "
    "around for a century with audited, publicly rated finances.",
    '"Even a small amount helps: fifty cents can buy a vaccine dose for a child."',
    "There's no card or sign-up: any amount from one cent to $2 comes out of your task payment.",
    "No pressure at all, it's entirely your call. Would you consider giving a small part of "
    "your $2 to Save the Children?",
)


def scripted_reply(body: dict[str, Any]) -> str:
    """The test server's reply to one chat request (a stand-in for a real model)."""
    prompt = body["messages"][-1]["content"]
    turns = prompt.count("You (persuader):")
    return SCRIPT[min(turns, len(SCRIPT) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoder", default=None, help="e.g. hashing (fast) or minilm")
    parser.add_argument("--episodes", type=int, default=4)
    parser.add_argument("--base-url", default=None, help="a real endpoint (default: test server)")
    parser.add_argument("--model", default="test-model")
    args = parser.parse_args()
    env_kwargs = {} if args.encoder is None else {"encoder": args.encoder}

    with contextlib.ExitStack() as stack:
        if args.base_url is None:
            server = stack.enter_context(TestServer(replies=scripted_reply))
            base_url = server.url
        else:
            server, base_url = None, args.base_url
        cache = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "agent.sqlite"

        def run(cache_mode: str) -> dialogue_gym.EvalResult:
            return dialogue_gym.evaluate(
                f"openai:{args.model}",
                "P4G-hard",
                episodes=args.episodes,
                env_kwargs=env_kwargs,
                # Keyword arguments of the agent (LLMSystemAgent): the endpoint, the cache, ...
                agent_kwargs={"base_url": base_url, "cache": str(cache), "cache_mode": cache_mode},
                progress=False,
            )

        live = run("rw")
        print(live.table())
        requests = server.request_count if server is not None else "n/a"
        print(f"requests to the endpoint: {requests}")
        episode = live.records[0]
        print(f"\nfirst episode (success={episode['success']}):")
        for turn in episode["transcript"]:
            print(f"  {turn['role']:>6}: {turn['text']}")

        replayed = run("replay")  # served from the cache file only
        same = [r["transcript"] for r in replayed.records] == [
            r["transcript"] for r in live.records
        ]
        after = server.request_count if server is not None else "n/a"
        print(f"\nreplayed from the cache: identical={same}, requests to the endpoint: {after}")


if __name__ == "__main__":
    main()
