"""How much slower is the corpus loaders' element walk than one ``json.loads``?

``iter_json_container`` (``dialogue_gym.data._io``) decodes a top-level JSON list or object one
element at a time so that every element's starting line is known for error messages. Issue 16
found it recounting newlines from the file start for every element (17 MB / 40k elements:
200 s against 0.05 s for ``json.loads``). This script builds such a document (an indented list
of ESConv-like records, ``--elements`` of them, about 430 bytes each), times
``iter_json_container`` over it and ``json.loads`` of the same text (best of ``--repeat``), and
prints both and their ratio. ``--impl FILE`` times another copy of ``_io.py`` instead, e.g. the
code before the fix::

    OMP_NUM_THREADS=1 python benchmarks/json_container.py
    git show 85587eb:dialogue_gym/data/_io.py > /tmp/old_io.py
    python benchmarks/json_container.py --impl /tmp/old_io.py --elements 5000

The exit status is 1 when the ratio is above ``--max-ratio`` (default 40).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any


def _module(impl: str | None) -> ModuleType:
    if impl is None:
        from dialogue_gym.data import _io

        return _io
    spec = importlib.util.spec_from_file_location("_io_under_test", impl)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot import {impl}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _document(elements: int) -> str:
    records = [
        {
            "emotion_type": "anxiety",
            "problem_type": "job crisis",
            "situation": f"I may lose my job, number {i}.",
            "dialog": [
                {"speaker": "seeker", "content": f"Hi, I am worried about work ({i})."},
                {"speaker": "supporter", "content": "That sounds hard. What happened?"},
                {"speaker": "seeker", "content": "My manager said there will be layoffs."},
            ],
        }
        for i in range(elements)
    ]
    return json.dumps(records, indent=2)


def _best(repeat: int, run: Callable[[], Any]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    """Runs the benchmark; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--elements", type=int, default=40_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--impl", help="another _io.py to time (e.g. the code before the fix)")
    parser.add_argument("--max-ratio", type=float, default=40.0)
    args = parser.parse_args(argv)
    io_module = _module(args.impl)
    text = _document(args.elements)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "ESConv.json"
        path.write_text(text, encoding="utf-8")

        def walk() -> None:
            count = sum(1 for _ in io_module.iter_json_container(path, text, expect="list"))
            assert count == args.elements

        walk_s = _best(args.repeat, walk)
        loads_s = _best(args.repeat, lambda: json.loads(text))
    ratio = walk_s / loads_s
    print(f"document: {len(text) / 2**20:.1f} MiB, {args.elements:,} elements")
    print(f"iter_json_container ({args.impl or 'dialogue_gym'}): {walk_s:.3f} s")
    print(f"json.loads:                 {loads_s:.3f} s")
    print(f"ratio:                      {ratio:.1f}x")
    return 1 if ratio > args.max_ratio else 0


if __name__ == "__main__":
    sys.exit(main())
