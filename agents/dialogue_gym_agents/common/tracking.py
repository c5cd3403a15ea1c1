"""Run logging: scalars to CSV always, to TensorBoard when it is installed; progress bars.

:class:`RunLogger` appends one row per scalar to ``scalars.csv`` (columns ``step``, ``tag``,
``value``, ``wall_s``; flushed on every write, so a learning curve can be read while a run is
going) and mirrors them to a ``torch.utils.tensorboard`` writer in ``tb/`` when the
``tensorboard`` package is importable. Without it the logger says so once per process and goes
on with CSV only.
"""

from __future__ import annotations

import csv
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

from tqdm.auto import tqdm

__all__ = ["SCALARS_FILE", "TB_DIR", "RunLogger", "progress_bar", "read_scalars"]

SCALARS_FILE = "scalars.csv"
"""The CSV of logged scalars inside a run folder."""

TB_DIR = "tb"
"""The TensorBoard event folder inside a run folder."""

_TB_NOTICE_SHOWN = False


def _tensorboard_writer(folder: Path, stream: TextIO) -> Any:
    """A ``SummaryWriter`` for ``folder``, or ``None`` (saying why once) when unavailable."""
    global _TB_NOTICE_SHOWN
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        if not _TB_NOTICE_SHOWN:
            print(
                "TensorBoard logging is off (the tensorboard package is not installed: "
                "pip install tensorboard); scalars go to CSV only.",
                file=stream,
            )
            _TB_NOTICE_SHOWN = True
        return None
    return SummaryWriter(log_dir=str(folder))


class RunLogger:
    """Logs scalars of one run.

    Args:
        folder: The run folder (created if missing); ``scalars.csv`` and ``tb/`` go there.
        tensorboard: Also write TensorBoard events when the package is installed.
        stream: Where the one-time TensorBoard notice goes (default: stderr).
    """

    def __init__(
        self, folder: str | Path, tensorboard: bool = True, stream: TextIO | None = None
    ) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._start = time.perf_counter()
        self._file = (self.folder / SCALARS_FILE).open("a", newline="", encoding="utf-8")
        self._csv = csv.writer(self._file)
        if self._file.tell() == 0:
            self._csv.writerow(["step", "tag", "value", "wall_s"])
        self.tb = (
            _tensorboard_writer(self.folder / TB_DIR, stream or sys.stderr) if tensorboard else None
        )

    def log(self, tag: str, value: float, step: int) -> None:
        """Logs one scalar (e.g. ``log("ppo/rollout_sr", 0.4, step=3)``)."""
        wall = time.perf_counter() - self._start
        self._csv.writerow([int(step), tag, repr(float(value)), f"{wall:.3f}"])
        self._file.flush()
        if self.tb is not None:
            self.tb.add_scalar(tag, float(value), int(step))

    def log_dict(self, values: Mapping[str, float], step: int, prefix: str = "") -> None:
        """Logs several scalars at one step, each tag prefixed with ``prefix``."""
        for tag, value in values.items():
            self.log(prefix + tag, value, step)

    def close(self) -> None:
        """Flushes and closes the CSV file and the TensorBoard writer."""
        if not self._file.closed:
            self._file.close()
        if self.tb is not None:
            self.tb.close()
            self.tb = None

    def __enter__(self) -> RunLogger:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def read_scalars(folder: str | Path, tag: str | None = None) -> list[tuple[int, str, float]]:
    """Reads ``scalars.csv`` of a run folder as ``(step, tag, value)`` rows (one tag or all)."""
    rows = []
    with (Path(folder) / SCALARS_FILE).open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if tag is None or row["tag"] == tag:
                rows.append((int(row["step"]), row["tag"], float(row["value"])))
    return rows


def progress_bar(total: int | None, desc: str, enabled: bool = True, unit: str = "it") -> tqdm:
    """A tqdm bar (hidden when ``enabled`` is false or stderr is not a terminal-like stream)."""
    return tqdm(
        total=total, desc=desc, unit=unit, disable=None if enabled else True, dynamic_ncols=True
    )
