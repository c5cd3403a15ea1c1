"""Errors raised by the corpus loaders."""

from __future__ import annotations

from pathlib import Path

__all__ = ["CorpusError", "DataNotFoundError"]


class CorpusError(ValueError):
    """A corpus file is malformed: bad encoding, truncated JSON, missing columns, empty file.

    The message always names the file and, where one applies, the line (``path:line: what``).
    For CSV files ``line`` is the physical line where the row starts (the header is line 1);
    for JSON documents it is the line where the offending record starts.

    Attributes:
        path: The offending file.
        line: 1-based line number, or ``None`` when the problem concerns the whole file.
        reason: The problem, without the location.
    """

    def __init__(self, path: str | Path, line: int | None, reason: str):
        self.path = Path(path)
        self.line = line
        self.reason = reason
        where = f"{self.path}:{line}" if line is not None else f"{self.path}"
        super().__init__(f"{where}: {reason}")

    def __reduce__(self) -> tuple[type[CorpusError], tuple[Path, int | None, str]]:
        return (type(self), (self.path, self.line, self.reason))


class DataNotFoundError(FileNotFoundError):
    """No data root was given, or the expected corpus files are not where they were looked for.

    The message says where the files were looked for and where to put them.
    """

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message
