"""Atomic checkpoint folders with a verified manifest, and loaders with clear errors.

A checkpoint is a folder holding its artifact files and a ``checkpoint.json`` manifest::

    {"format": "dialogue-gym-checkpoint", "format_version": 1,
     "kind": "planner", "task": "P4G", "strategies": ["greeting", ...],
     "config": {...}, "versions": {"dialogue_gym": "0.1.0", "torch": "2.13.0", ...},
     "files": {"policy.pt": "<sha256>", ...}, "content_hash": "<sha256>",
     "created": "2026-01-01T00:00:00+00:00", "info": {...}}

``content_hash`` is the SHA-256 of the canonical JSON of ``files`` (name → SHA-256 of the
file), so it changes whenever any artifact does. Files in the folder that the manifest does
not list (logs, TensorBoard events) are not verified.

**Writing** (:class:`CheckpointWriter`): everything — artifacts and the run's logs — is
written into a hidden staging folder beside the target (``.<name>.partial-<pid>-XXXX``);
``commit`` writes the manifest last, syncs, and renames the staging folder into place. A run
that fails or is interrupted (an exception, Ctrl-C, SIGTERM through
:func:`~dialogue_gym_agents.common.cli.run_trainer`) before ``commit`` removes its staging
folder: the target either does not appear or keeps its previous content. A folder left by a
run killed outright (SIGKILL) is removed by the next run writing the same target. An existing
checkpoint is replaced only with ``overwrite=True``; a non-empty folder that is not a
checkpoint is never replaced.

**Loading** (:func:`load_checkpoint`) raises :class:`CheckpointError` subclasses whose message
says what is wrong and what to do: a missing folder (:class:`CheckpointNotFoundError`), a
folder without a manifest (an interrupted run), a manifest or artifact that does not match
its hashes (:class:`CorruptCheckpointError`), a checkpoint of another kind, task or strategy
set (:class:`CheckpointMismatchError`).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import os
import pickle
import platform
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from types import TracebackType
from typing import Any

from dialogue_gym.cards.card import TaskCard

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "MANIFEST",
    "Checkpoint",
    "CheckpointError",
    "CheckpointMismatchError",
    "CheckpointNotFoundError",
    "CheckpointWriter",
    "CorruptCheckpointError",
    "ModelNotFoundError",
    "check_backend_spec",
    "check_card",
    "file_sha256",
    "load_checkpoint",
    "resolve_model_path",
    "versions",
]

FORMAT = "dialogue-gym-checkpoint"
FORMAT_VERSION = 1
MANIFEST = "checkpoint.json"
_PARTIAL = ".partial-"
_REQUIRED = ("format", "format_version", "kind", "task", "strategies", "files", "content_hash")


class CheckpointError(ValueError):
    """A checkpoint cannot be written or used; the message says why and what to do."""


class CheckpointNotFoundError(CheckpointError, FileNotFoundError):
    """The checkpoint folder does not exist."""


class CorruptCheckpointError(CheckpointError):
    """The folder is not a complete, intact checkpoint (no manifest, bad JSON, bad hashes)."""


class CheckpointMismatchError(CheckpointError):
    """The checkpoint is intact but of another kind, task or strategy set."""


class ModelNotFoundError(FileNotFoundError):
    """A model path (or a local ``hf:PATH`` backend) does not exist."""


# -- helpers ---------------------------------------------------------------------------------------


def file_sha256(path: str | Path, chunk: int = 1 << 20) -> str:
    """The SHA-256 hex digest of a file's bytes."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _content_hash(files: Mapping[str, str]) -> str:
    canonical = json.dumps(dict(sorted(files.items())), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def versions(extra: Iterable[str] = ()) -> dict[str, str | None]:
    """Versions of Python and of the packages a checkpoint depends on (``None``: absent)."""
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in ("dialogue-gym", "dialogue-gym-agents", "numpy", "torch", *extra):
        try:
            found[name.replace("-", "_")] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name.replace("-", "_")] = None
    return found


def resolve_model_path(path: str | Path, what: str = "model") -> Path:
    """Checks that a local model path exists and returns it (``~`` expanded).

    Raises:
        ModelNotFoundError: Nothing exists there (the message names the path).
    """
    resolved = Path(path).expanduser()
    if not resolved.exists():
        raise ModelNotFoundError(
            f"{what} path {str(path)!r} does not exist (models are never downloaded: give a "
            "local folder or file)"
        )
    return resolved


def check_backend_spec(spec: str) -> None:
    """Fails early for a local ``hf:PATH`` backend whose path does not exist.

    Specs naming no local path (``openai:MODEL``, ``fake``, ``hf:smollm2``, a Hugging Face
    cache id) are left to the backend.

    Raises:
        ModelNotFoundError: ``spec`` is ``hf:PATH`` with a path-like ``PATH`` that is missing.
    """
    kind, _, rest = spec.partition(":")
    if kind.strip().lower() != "hf" or not rest:
        return
    if rest.startswith(("/", "./", "../", "~", "\\")) or (len(rest) > 1 and rest[1] == ":"):
        resolve_model_path(rest, what=f"backend {spec!r} model")


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # not supported on this platform
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def _remove_stale_staging(out: Path) -> None:
    """Removes staging folders of ``out`` left by runs that were killed (SIGKILL, power loss)."""
    prefix = f".{out.name}{_PARTIAL}"
    for folder in out.parent.glob(f"{prefix}*"):
        pid_text = folder.name[len(prefix) :].split("-", 1)[0]
        if folder.is_dir() and pid_text.isdigit() and not _pid_alive(int(pid_text)):
            shutil.rmtree(folder, ignore_errors=True)


def _is_replaceable(path: Path) -> bool:
    """Whether ``path`` may be replaced: an empty folder or a checkpoint folder."""
    return path.is_dir() and (not any(path.iterdir()) or (path / MANIFEST).is_file())


# -- writing ---------------------------------------------------------------------------------------


class CheckpointWriter:
    """Stages a checkpoint folder and publishes it atomically (see the module docstring).

    Use as a context manager: write files under :attr:`path`, then call :meth:`commit`.
    Leaving the block without committing (an exception, Ctrl-C, a return) removes the staging
    folder.

    Args:
        out: The checkpoint folder to create.
        overwrite: Replace an existing checkpoint at ``out``.

    Raises:
        CheckpointError: ``out`` exists and is a checkpoint while ``overwrite`` is false, or it
            is a file or a non-empty folder that is not a checkpoint (never replaced).
    """

    def __init__(self, out: str | Path, overwrite: bool = False) -> None:
        self.out = Path(out).expanduser()
        self.overwrite = overwrite
        if self.out.exists():
            if not _is_replaceable(self.out):
                raise CheckpointError(
                    f"{self.out} exists and is not a checkpoint folder; refusing to replace "
                    "it: choose another --out"
                )
            if (self.out / MANIFEST).is_file() and not overwrite:
                raise CheckpointError(
                    f"a checkpoint already exists at {self.out}: pass --overwrite to replace "
                    "it, or choose another --out"
                )
        self._staging: Path | None = None
        self.committed = False

    @property
    def path(self) -> Path:
        """The staging folder to write into (exists inside the ``with`` block)."""
        if self._staging is None:
            raise RuntimeError("CheckpointWriter.path is available inside its `with` block")
        return self._staging

    def __enter__(self) -> CheckpointWriter:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale_staging(self.out)
        self._staging = Path(
            tempfile.mkdtemp(
                prefix=f".{self.out.name}{_PARTIAL}{os.getpid()}-", dir=self.out.parent
            )
        )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._staging is not None and self._staging.exists():
            shutil.rmtree(self._staging, ignore_errors=True)
        self._staging = None

    def commit(
        self,
        kind: str,
        card: TaskCard,
        config: Mapping[str, Any],
        files: Sequence[str],
        info: Mapping[str, Any] | None = None,
        extra_versions: Iterable[str] = (),
    ) -> Path:
        """Writes the manifest and moves the staged folder to ``out``.

        Args:
            kind: The checkpoint kind (the agent name that loads it: ``planner``, ...).
            card: The task card trained for (its id and strategy names are recorded).
            config: The run's config as a JSON-ready dict.
            files: The artifact files (paths relative to :attr:`path`) to hash and verify.
            info: Anything else worth keeping (data statistics, final metrics).
            extra_versions: More package names whose versions to record.

        Returns:
            The published checkpoint folder.

        Raises:
            CheckpointError: A listed file is missing, or ``commit`` was already called.
        """
        if self.committed:
            raise CheckpointError("this checkpoint was already committed")
        staging = self.path
        hashes: dict[str, str] = {}
        for name in files:
            file = staging / name
            if not file.is_file():
                raise CheckpointError(f"artifact {name!r} was not written to the checkpoint")
            hashes[name] = file_sha256(file)
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "kind": kind,
            "task": card.id,
            "strategies": list(card.strategy_names),
            "config": dict(config),
            "versions": versions(extra_versions),
            "files": hashes,
            "content_hash": _content_hash(hashes),
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "info": dict(info or {}),
        }
        with (staging / MANIFEST).open("w", encoding="utf-8") as handle:
            json.dump(manifest, handle, indent=2, sort_keys=False, default=str)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        _fsync_dir(staging)
        self._publish(staging)
        self.committed = True
        self._staging = None
        return self.out

    def _publish(self, staging: Path) -> None:
        backup: Path | None = None
        if self.out.exists():
            if not _is_replaceable(self.out):  # it changed during the run
                raise CheckpointError(f"{self.out} is no longer a checkpoint folder; not replaced")
            backup = self.out.with_name(f".{self.out.name}.old-{os.getpid()}")
            os.replace(self.out, backup)
        try:
            os.replace(staging, self.out)
        except BaseException:
            if backup is not None:
                os.replace(backup, self.out)
            raise
        _fsync_dir(self.out.parent)
        if backup is not None:
            shutil.rmtree(backup, ignore_errors=True)


# -- loading ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """A verified checkpoint folder.

    Attributes:
        path: The folder.
        manifest: The parsed ``checkpoint.json``.
    """

    path: Path
    manifest: Mapping[str, Any]

    @property
    def kind(self) -> str:
        """The checkpoint kind (``planner``, ``sft-retrieval``, ...)."""
        return str(self.manifest["kind"])

    @property
    def task(self) -> str:
        """The task id it was trained for."""
        return str(self.manifest["task"])

    @property
    def strategies(self) -> tuple[str, ...]:
        """The strategy names of the task card it was trained with."""
        return tuple(self.manifest["strategies"])

    @property
    def config(self) -> Mapping[str, Any]:
        """The training config."""
        return self.manifest.get("config", {})

    @property
    def info(self) -> Mapping[str, Any]:
        """Extra information recorded at training time."""
        return self.manifest.get("info", {})

    def file(self, name: str) -> Path:
        """The path of a listed artifact.

        Raises:
            CorruptCheckpointError: The manifest does not list ``name``.
        """
        if name not in self.manifest["files"]:
            raise CorruptCheckpointError(
                f"checkpoint {self.path} has no artifact {name!r} (it lists "
                f"{sorted(self.manifest['files'])})"
            )
        return self.path / name


def _read_manifest(folder: Path) -> dict[str, Any]:
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        raise CorruptCheckpointError(
            f"{folder} is not a complete checkpoint: {MANIFEST} is missing (an interrupted "
            "run, or not a checkpoint folder); train again with `dialogue-gym train ...`"
        )
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptCheckpointError(
            f"checkpoint {folder} is corrupt: {MANIFEST} is not valid JSON ({exc})"
        ) from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise CorruptCheckpointError(
            f"{folder}/{MANIFEST} is not a dialogue-gym checkpoint manifest"
        )
    missing = [key for key in _REQUIRED if key not in manifest]
    if missing:
        raise CorruptCheckpointError(
            f"checkpoint {folder} is corrupt: its manifest lacks {', '.join(missing)}"
        )
    if manifest["format_version"] != FORMAT_VERSION:
        raise CheckpointError(
            f"checkpoint {folder} has format version {manifest['format_version']}; this "
            f"dialogue-gym-agents reads version {FORMAT_VERSION}"
        )
    if not isinstance(manifest["files"], dict):
        raise CorruptCheckpointError(f"checkpoint {folder} is corrupt: bad file list")
    return manifest


def _verify_files(folder: Path, files: Mapping[str, str], content_hash: str) -> None:
    if _content_hash(files) != content_hash:
        raise CorruptCheckpointError(
            f"checkpoint {folder} is corrupt: its file list does not match its content hash"
        )
    for name, expected in files.items():
        file = folder / name
        if not file.is_file():
            raise CorruptCheckpointError(
                f"checkpoint {folder} is incomplete: artifact {name!r} is missing"
            )
        if file_sha256(file) != expected:
            raise CorruptCheckpointError(
                f"checkpoint {folder} is corrupt: artifact {name!r} does not match its SHA-256 "
                "in the manifest (changed or truncated); train again"
            )


def check_card(checkpoint: Checkpoint, card: TaskCard, strategies: bool = True) -> None:
    """Checks that ``card`` is the task (and strategy set) the checkpoint was trained for.

    Raises:
        CheckpointMismatchError: Another task, or (with ``strategies``) another strategy set.
    """
    if checkpoint.task != card.id:
        raise CheckpointMismatchError(
            f"checkpoint {checkpoint.path} was trained for task {checkpoint.task!r}, not "
            f"{card.id!r}: train one for {card.id} (dialogue-gym train ... --task {card.id})"
        )
    if strategies and checkpoint.strategies != tuple(card.strategy_names):
        trained, current = checkpoint.strategies, tuple(card.strategy_names)
        missing = [s for s in trained if s not in current]
        added = [s for s in current if s not in trained]
        detail = (
            f"the checkpoint has {missing or 'none'} that the card lacks and the card has "
            f"{added or 'none'} that the checkpoint lacks"
            if missing or added
            else "same strategies in another order"
        )
        raise CheckpointMismatchError(
            f"checkpoint {checkpoint.path} was trained on another strategy set of task "
            f"{card.id} ({detail}); its actions would be wrong: retrain with this card"
        )


def load_checkpoint(
    path: str | Path | None,
    kind: str | None = None,
    card: TaskCard | None = None,
    check_strategies: bool = True,
) -> Checkpoint:
    """Opens and verifies a checkpoint folder.

    Args:
        path: The checkpoint folder.
        kind: The expected kind (``None``: any).
        card: When given, the task card the checkpoint must fit (see :func:`check_card`).
        check_strategies: With ``card``, also require the same strategy names in the same
            order.

    Returns:
        The verified checkpoint.

    Raises:
        CheckpointNotFoundError: ``path`` is ``None``/empty or does not exist.
        CorruptCheckpointError: No manifest, bad JSON, a missing or altered artifact.
        CheckpointMismatchError: Another kind, task or strategy set.
        CheckpointError: ``path`` is a file, or an unsupported format version.
    """
    if path is None or str(path).strip() == "":
        what = f"a {kind} " if kind else "a "
        raise CheckpointNotFoundError(
            f"{what}checkpoint folder is needed (e.g. --agent {kind or 'NAME'}:DIR, "
            f"or checkpoint=DIR)"
        )
    folder = Path(path).expanduser()
    if not folder.exists():
        raise CheckpointNotFoundError(
            f"checkpoint folder {folder} does not exist (train one with `dialogue-gym train "
            f"... --out {folder}`)"
        )
    if not folder.is_dir():
        raise CheckpointError(f"{folder} is a file, not a checkpoint folder")
    manifest = _read_manifest(folder)
    if kind is not None and manifest["kind"] != kind:
        raise CheckpointMismatchError(
            f"{folder} is a {manifest['kind']!r} checkpoint, not a {kind!r} one: load it "
            f"with --agent {manifest['kind']}:{folder}"
        )
    _verify_files(folder, manifest["files"], manifest["content_hash"])
    checkpoint = Checkpoint(path=folder, manifest=manifest)
    if card is not None:
        check_card(checkpoint, card, strategies=check_strategies)
    return checkpoint


def load_torch_module(build: Callable[[], Any], path: str | Path, what: str) -> Any:
    """Builds a torch module and loads its saved weights strictly, in eval mode.

    Args:
        build: Creates the module (from the shapes recorded in the manifest).
        path: The saved ``state_dict`` file.
        what: Named in the error (``"the planner policy"``).

    Raises:
        CorruptCheckpointError: The manifest's shapes are unusable, or the weights cannot be
            read or do not fit them.
    """
    import torch  # only the torch-based agents need it

    path = Path(path)
    try:
        module = build()
        state = torch.load(path, map_location="cpu", weights_only=True)
        module.load_state_dict(state, strict=True)
    except pickle.UnpicklingError:  # torch's text would suggest unsafe loading: not shown
        raise CorruptCheckpointError(
            f"cannot load {what}: {path} is not a valid checkpoint (it holds pickled objects "
            "other than tensor weights, which are never loaded)"
        ) from None
    except (KeyError, TypeError, ValueError, RuntimeError, OSError, EOFError) as exc:
        message = " ".join(str(exc).split())[:300]
        raise CorruptCheckpointError(f"cannot load {what} in {path.parent}: {message}") from None
    module.eval()
    return module
