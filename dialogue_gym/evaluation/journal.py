"""The files of an evaluation run: one ``episodes.jsonl`` reader and writer, a lock, JSON writes.

:func:`dialogue_gym.evaluate` (resume) and :mod:`dialogue_gym.report` read ``episodes.jsonl``
through :func:`read_episodes` only (which streams it with :class:`JournalReader`), so both
apply the same rules:

* A *last* line that is not valid JSON is the trace of an interrupted write: it is left out
  with a ``RuntimeWarning`` (its episode was never recorded). The evaluator also cuts it off
  the file before appending, and plays that episode again. A whole last record that lacks
  only its newline counts (the evaluator adds the newline).
* Any *other* line that is not a JSON episode record is an error (:class:`JournalError`,
  naming ``file:line``): appends are single ``write`` calls followed by ``fsync`` under a
  lock, so only something else can have written it, and guessing would report wrong numbers.
* Blank lines are skipped. Several records of one episode (agent, env id, episode index,
  seed) keep the first one, unless it is errored and a later one exists (a
  ``--retry-errored`` rerun): the later one replaces it (:func:`supersedes`).

Writes: :func:`append_line` appends one record with a single ``write`` and ``fsync``;
:func:`write_json` replaces a JSON file atomically through a uniquely named temporary file
in the same folder (``tempfile.mkstemp`` + ``os.replace``), so concurrent readers see the
old or the new file, never a partial one. Failures raise :class:`JournalWriteError` with
the path and the reason (e.g. no space left on device). :class:`RunLock` keeps a second
evaluation out of an output folder in use.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import tempfile
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "EPISODES_FILE",
    "LOCK_FILE",
    "MANIFEST_FILE",
    "SUMMARY_FILE",
    "Episodes",
    "JournalError",
    "JournalReader",
    "JournalWriteError",
    "OutDirError",
    "RecordKey",
    "RunLock",
    "RunLockedError",
    "Tail",
    "append_line",
    "check_writable",
    "open_out_dir",
    "read_episodes",
    "record_key",
    "record_problem",
    "supersedes",
    "write_json",
]

EPISODES_FILE = "episodes.jsonl"
"""Per-episode records inside the output directory."""

SUMMARY_FILE = "summary.json"
"""Per-(agent, env) summaries inside the output directory."""

MANIFEST_FILE = "run.json"
"""The agent and env options each (agent, env id) of the folder was run with."""

LOCK_FILE = ".lock"
"""Held (and holding the pid of the holder) while an evaluation writes the folder."""

RecordKey = tuple[str, str, int, int]
"""An episode's identity: agent, env id, episode index and reset seed (:func:`record_key`)."""


class JournalError(ValueError):
    """An ``episodes.jsonl`` that cannot be used as it is (a corrupt line that is not the last).

    A ``ValueError``: the command line reports it in one line with exit status 2.
    """


class OutDirError(ValueError):
    """An output folder that cannot be written (read-only, not a folder, no permission)."""


class RunLockedError(OutDirError):
    """Another evaluation holds the output folder's lock."""


class JournalWriteError(RuntimeError):
    """Writing a run file failed mid-run (e.g. no space left on device).

    Attributes:
        path: The file being written.
        errno: The ``OSError`` errno (``errno.ENOSPC`` for a full disk), or ``None``.
    """

    def __init__(self, message: str, path: Path, error_number: int | None) -> None:
        super().__init__(message)
        self.path = path
        self.errno = error_number


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def record_problem(record: Any) -> str | None:
    """Why a parsed line cannot be used as an episode record; ``None`` when it can."""
    if not isinstance(record, dict):
        return f"expected a JSON object per line, got {type(record).__name__}"
    missing = [key for key in ("agent", "env_id", "success") if key not in record]
    if missing:
        return "record lacks field(s) " + ", ".join(repr(k) for k in missing)
    for key in ("agent", "env_id"):
        if not isinstance(record[key], str) or not record[key]:
            return f"{key!r} must be a non-empty string, got {record[key]!r}"
    if not isinstance(record["success"], bool):
        return f"'success' must be true or false, got {record['success']!r}"
    for key in ("episode", "seed"):
        if key not in record:
            return f"record lacks field {key!r}"
        if not _is_int(record[key]) or record[key] < 0:
            return f"{key!r} must be a non-negative integer, got {record[key]!r}"
    if record.get("success_turn") is not None and not _is_int(record["success_turn"]):
        return f"'success_turn' must be an integer, got {record['success_turn']!r}"
    if record.get("T") is not None and not (_is_int(record["T"]) and record["T"] >= 1):
        return f"'T' must be a positive integer, got {record['T']!r}"
    q = record.get("q")
    if q is not None and not (isinstance(q, list) and all(_is_number(x) for x in q)):
        return f"'q' must be a list of numbers, got {q!r}"
    return None


def record_key(record: Mapping[str, Any]) -> RecordKey:
    """The identity of an episode: agent, env id, episode index and reset seed."""
    return (
        str(record["agent"]),
        str(record["env_id"]),
        int(record["episode"]),
        int(record["seed"]),
    )


def supersedes(kept: Mapping[str, Any], later: Mapping[str, Any]) -> bool:
    """Whether ``later`` replaces ``kept``, an earlier record of the same episode.

    Only an errored record is replaced (by the rerun of ``--retry-errored``); otherwise the
    first record of an episode stands.
    """
    del later  # the rule depends on the kept record only
    return bool(kept.get("errored"))


@dataclasses.dataclass(frozen=True)
class Tail:
    """An interrupted last write: line ``line`` starts at byte ``offset`` of the file."""

    line: int
    offset: int
    reason: str


class JournalReader:
    """Streams the records of one ``episodes.jsonl`` (the rules are in the module docstring).

    Iterating yields ``(line_number, record)`` in file order, repeats included (callers
    apply :func:`supersedes`); afterwards :attr:`tail` describes an ignored incomplete last
    line, if any.

    Args:
        path: The file.
        stacklevel: Where the incomplete-last-line warning points: ``2`` is the code that
            iterates, ``3`` its caller (a helper such as :func:`read_episodes`).

    Raises:
        JournalError: (while iterating) A line other than the last is not a JSON episode
            record; the message names ``file:line``.
        OSError: The file cannot be read.
    """

    def __init__(self, path: str | Path, stacklevel: int = 2) -> None:
        self.path = Path(path)
        self.stacklevel = stacklevel
        self.tail: Tail | None = None
        self.unterminated = False

    def __iter__(self) -> Iterator[tuple[int, dict[str, Any]]]:
        self.tail, self.unterminated = None, False
        pending: Tail | None = None  # an unparseable line: an error unless it is the last
        offset = 0
        with self.path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                start, offset = offset, offset + len(raw)
                if not raw.strip():
                    continue
                if pending is not None:
                    raise JournalError(self._corrupt_message(pending))
                try:
                    record = json.loads(raw)
                except UnicodeDecodeError as exc:
                    pending = Tail(number, start, f"not UTF-8 text ({exc.reason})")
                    continue
                except json.JSONDecodeError as exc:
                    reason = f"not valid JSON ({exc.msg}: column {exc.colno})"
                    pending = Tail(number, start, reason)
                    continue
                problem = record_problem(record)
                if problem is not None:
                    raise JournalError(f"{self.path}:{number}: {problem}")
                # A whole record lacking only its newline (the last line) counts; the
                # evaluator ends the line before appending (:meth:`repair`).
                self.unterminated = not raw.endswith(b"\n")
                yield number, record
        if pending is not None:
            self.tail = pending
            warnings.warn(
                f"{self.path}:{pending.line}: ignoring an incomplete last record "
                f"({pending.reason}; an interrupted write): its episode was not recorded and "
                "rerunning the same `dialogue-gym eval` command with this --out plays it again",
                RuntimeWarning,
                stacklevel=self.stacklevel,
            )

    def _corrupt_message(self, bad: Tail) -> str:
        return (
            f"{self.path}:{bad.line}: corrupt record, {bad.reason}; only the last line can be "
            "left by an interrupted write, so something else changed this file: repair or "
            f"delete line {bad.line} (its episode is then played again on resume)"
        )

    def repair(self) -> int:
        """Makes the file end with a whole line, as the last iteration found it.

        An incomplete last line is cut off; a whole last record without its newline gets one.

        Returns:
            The number of bytes removed (0 when there was no incomplete line).
        """
        if self.tail is None:
            if self.unterminated:
                with self.path.open("ab") as handle:
                    handle.write(b"\n")
                    handle.flush()
                    os.fsync(handle.fileno())
                self.unterminated = False
            return 0
        size = self.path.stat().st_size
        with self.path.open("r+b") as handle:
            handle.truncate(self.tail.offset)
            handle.flush()
            os.fsync(handle.fileno())
        removed = size - self.tail.offset
        self.tail = None
        return removed


@dataclasses.dataclass
class Episodes:
    """The episodes of one ``episodes.jsonl``, one record each (see :func:`read_episodes`).

    Attributes:
        records: The record that stands for each episode (:func:`record_key`), in the order
            the episodes first appear in the file.
        duplicates: How many records were left out or replaced as repeats of an episode.
    """

    records: dict[RecordKey, dict[str, Any]]
    duplicates: int = 0


def read_episodes(
    path: str | Path,
    *,
    take: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
    on_store: Callable[[Mapping[RecordKey, dict[str, Any]], RecordKey, bool], None] | None = None,
    repair: bool = False,
) -> Episodes:
    """Reads the episodes of a journal: the one reader of evaluation resume and the report.

    Records stream through :class:`JournalReader` (its rules), and a repeat of an episode
    replaces the stored record only when :func:`supersedes` says so.

    Args:
        path: The ``episodes.jsonl`` file.
        take: Called on every record in file order (repeats included) before it is stored;
            returns the record to store (e.g. a trimmed copy) or ``None`` to pass over it.
            It may raise to refuse the file (e.g. records of another configuration).
        on_store: Called after a record was stored under its key, with ``True`` for the first
            record of an episode and ``False`` for one that replaced an earlier record; it
            may trim stored records to bound memory (the report's transcript budget).
        repair: Make the file end with a whole line afterwards (:meth:`JournalReader.repair`),
            as the evaluator does before appending.

    Returns:
        The episodes.

    Raises:
        JournalError: A line other than the last is not a JSON episode record.
        OSError: The file cannot be read.
    """
    reader = JournalReader(path, stacklevel=3)  # the warning points at our caller
    episodes = Episodes({})
    records = episodes.records
    for _, raw in reader:
        record = raw if take is None else take(raw)
        if record is None:
            continue
        key = record_key(record)
        kept = records.get(key)
        if kept is not None:
            episodes.duplicates += 1
            if not supersedes(kept, record):
                continue
        records[key] = record
        if on_store is not None:
            on_store(records, key, kept is None)
    if repair:
        reader.repair()
    return episodes


# -- writing -----------------------------------------------------------------------------------


def _reason(exc: OSError) -> str:
    name = errno.errorcode.get(exc.errno or 0)
    text = exc.strerror or str(exc)
    return f"{text} ({name})" if name else text


def _write_error(path: Path, exc: OSError, what: str) -> JournalWriteError:
    hint = ""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        hint = "; free some space and rerun the same command to resume"
    elif exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        hint = "; make the folder writable and rerun the same command to resume"
    return JournalWriteError(f"cannot {what} {path}: {_reason(exc)}{hint}", path, exc.errno)


def append_line(path: Path, line: str) -> None:
    """Appends one JSON line with a single write, then flushes it to disk.

    A failed write is cut back off the file (best effort), so the file stays a sequence of
    whole records.

    Raises:
        JournalWriteError: The write failed (e.g. ``ENOSPC``).
    """
    data = (line + "\n").encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise _write_error(path, exc, "write") from None
    try:
        size = os.fstat(fd).st_size
        try:
            _write_all(fd, data)
            os.fsync(fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise _write_error(path, exc, "write") from None
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def write_json(path: Path, payload: Any) -> None:
    """Replaces ``path`` with ``payload`` (plain JSON types) atomically.

    The text goes to a uniquely named temporary file in the same folder, is flushed to disk
    and renamed over ``path``: concurrent writers never share a temporary file and readers
    see the old or the new content, never a mix.

    Raises:
        JournalWriteError: The file could not be written.
    """
    text = json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise _write_error(path, exc, "write") from None
    try:
        try:
            _write_all(fd, text.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise _write_error(path, exc, "write") from None


def check_writable(directory: Path) -> None:
    """Checks that new files can be created in ``directory`` and its records appended.

    Raises:
        OutDirError: The folder (or its ``episodes.jsonl``) is not writable.
    """
    try:
        fd, probe = tempfile.mkstemp(prefix=".write-check.", dir=directory)
        os.close(fd)
        os.unlink(probe)
        episodes = directory / EPISODES_FILE
        if episodes.exists():
            os.close(os.open(episodes, os.O_WRONLY | os.O_APPEND))
    except OSError as exc:
        raise OutDirError(
            f"--out {directory} is not writable ({_reason(exc)}); nothing was played"
        ) from None


# -- the lock ----------------------------------------------------------------------------------


def _try_lock(fd: int) -> bool:
    """Takes an exclusive lock on ``fd`` without waiting; whether it was taken."""
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


class RunLock:
    """An exclusive lock on an output folder (``DIR/.lock``, holding the holder's pid).

    The operating system drops the lock when its holder exits, even on ``SIGKILL``, so a
    crashed run never blocks the next one. Use as a context manager or call
    :meth:`acquire` and :meth:`release`.

    Args:
        directory: The output folder (it must exist).
    """

    def __init__(self, directory: str | Path) -> None:
        self.path = Path(directory) / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> None:
        """Takes the lock.

        Raises:
            RunLockedError: Another process holds it (the message names its pid).
            OutDirError: The lock file cannot be created (read-only folder).
        """
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise OutDirError(
                    f"--out {self.path.parent} is not writable ({_reason(exc)}); nothing was played"
                ) from None
            if not _try_lock(fd):
                holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
                os.close(fd)
                raise RunLockedError(
                    f"--out {self.path.parent} is in use by another evaluation (pid {holder}); "
                    "wait for it to finish or use another output folder"
                )
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:  # not removed by a releasing holder between our open and lock
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self._fd = fd

    def release(self) -> None:
        """Removes the lock file and drops the lock (nothing when not held)."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


@contextlib.contextmanager
def open_out_dir(directory: Path) -> Iterator[None]:
    """Creates (if needed), locks and checks an output folder for the ``with`` block.

    A folder this call created is removed again when the block fails before any episode was
    recorded, so a failed evaluation leaves no empty ``--out`` behind.

    Raises:
        OutDirError: The path is not a folder or cannot be created or written.
        RunLockedError: Another evaluation holds the folder.
    """
    existed = directory.exists()
    if existed and not directory.is_dir():
        raise OutDirError(f"--out {directory} exists and is not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutDirError(f"cannot create --out {directory} ({_reason(exc)})") from None
    lock = RunLock(directory)
    try:
        lock.acquire()
        check_writable(directory)
        yield
    except BaseException:
        lock.release()
        if not existed:
            _remove_unused(directory)
        raise
    lock.release()


def _remove_unused(directory: Path) -> None:
    """Removes a folder holding nothing but run settings and an empty episodes file."""
    episodes = directory / EPISODES_FILE
    with contextlib.suppress(OSError):
        if episodes.exists() and episodes.stat().st_size:
            return
        if {p.name for p in directory.iterdir()} <= {MANIFEST_FILE, EPISODES_FILE}:
            for name in (MANIFEST_FILE, EPISODES_FILE):
                (directory / name).unlink(missing_ok=True)
            directory.rmdir()
