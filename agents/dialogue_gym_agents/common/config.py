"""Dataclass configs whose documented fields become command-line options.

Every trainer describes its settings as a dataclass; each field carries its help text in
``metadata={"help": ...}`` (use :func:`option`). :func:`build_parser` turns the dataclass into
an :mod:`argparse` parser — ``--help`` lists every field with its help, type and default — and
:func:`parse_config` builds the config from an argv list. Field ``learning_rate`` becomes
``--learning-rate``; a field without a default is a required option.

Supported field types: ``int``, ``float``, ``str``, ``Path``, ``bool`` (``--flag`` /
``--no-flag``), ``Literal[...]`` (choices), ``X | None`` (the option may be omitted; the
literal ``none`` on the command line also gives ``None``) and ``tuple[int, ...]`` /
``tuple[float, ...]`` (one or more values).

Example:
    >>> @dataclasses.dataclass
    ... class Demo:
    ...     steps: int = option(100, "PPO environment steps")
    >>> parse_config(Demo, ["--steps", "5"]).steps
    5
"""

from __future__ import annotations

import argparse
import dataclasses
import types
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

__all__ = [
    "ConfigError",
    "TrainConfig",
    "build_parser",
    "config_from_dict",
    "config_to_dict",
    "option",
    "parse_config",
]

C = TypeVar("C")

_NONE_WORDS = ("none", "None", "null")


class ConfigError(ValueError):
    """A config value is invalid (the message names the option)."""


def option(default: Any = dataclasses.MISSING, help: str = "", **kwargs: Any) -> Any:
    """A dataclass field with command-line help.

    Args:
        default: The default value (omit for a required option). Mutable defaults are not
            allowed; use tuples.
        help: One-line description shown by ``--help``.
        **kwargs: Passed to :func:`dataclasses.field`.

    Returns:
        The field.
    """
    metadata = {**kwargs.pop("metadata", {}), "help": help}
    return dataclasses.field(default=default, metadata=metadata, **kwargs)


@dataclasses.dataclass
class TrainConfig:
    """Settings every trainer shares (the task, the output folder, seeding, logging).

    Attributes:
        task: The task id (``P4G``, ``ESConv``, ``ED``, ``CB``, ...).
        out: The checkpoint folder to create.
        seed: Seed of the run's random generators.
        encoder: Sentence encoder (``minilm`` or ``hashing``).
        data: Data root holding the corpora.
        overwrite: Replace an existing checkpoint at ``out``.
        progress: Show progress bars.
        tensorboard: Also log to TensorBoard when it is installed.
    """

    task: str = option(help="task id: P4G, ESConv, ED, CB, Merchant or Courier")
    out: Path = dataclasses.field(
        metadata={"help": "checkpoint folder to create (written atomically)"}
    )
    seed: int = option(0, "seed of the run's own random generators")
    encoder: str = option(
        "minilm", "sentence encoder: minilm (default, offline MiniLM) or hashing (fast, tests)"
    )
    data: str | None = option(None, "data root holding the corpora (default: $DIALOGUE_GYM_DATA)")
    overwrite: bool = option(False, "replace an existing checkpoint at --out")
    progress: bool = option(True, "show progress bars")
    tensorboard: bool = option(
        True, "also log to TensorBoard in OUT/tb when the tensorboard package is installed"
    )


# -- dataclass -> argparse -------------------------------------------------------------------------


def _strip_optional(annotation: Any) -> tuple[Any, bool]:
    """``X | None`` → ``(X, True)``; anything else → ``(annotation, False)``."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1 and len(get_args(annotation)) == 2:
            return args[0], True
        raise TypeError(f"unsupported union type {annotation!r}")
    return annotation, False


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _scalar(kind: Any, optional: bool) -> Callable[[str], Any]:
    """The argparse ``type`` converter for a scalar field type."""
    base: Callable[[str], Any]
    if kind is bool:
        base = _bool
    elif kind in (int, float, str):
        base = kind
    elif kind is Path:
        base = Path
    else:
        raise TypeError(f"unsupported config field type {kind!r}")

    def convert(text: str) -> Any:
        if optional and text in _NONE_WORDS:
            return None
        try:
            return base(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {getattr(kind, '__name__', kind)}, got {text!r}"
            ) from None

    convert.__name__ = getattr(kind, "__name__", "value")  # argparse names it in errors
    return convert


def _describe_default(value: Any) -> str:
    if isinstance(value, tuple):
        return " ".join(str(v) for v in value) or "(empty)"
    if isinstance(value, bool):
        return "on" if value else "off"
    return "none" if value is None else str(value)


def build_parser(
    cls: type,
    prog: str | None = None,
    description: str | None = None,
    parser: argparse.ArgumentParser | None = None,
) -> argparse.ArgumentParser:
    """Builds an argparse parser from a config dataclass.

    Args:
        cls: The config dataclass (fields made with :func:`option`).
        prog: Program name shown in usage lines.
        description: Shown at the top of ``--help`` (default: the class docstring's summary).
        parser: Add the options to this parser instead of a new one.

    Returns:
        The parser; its namespace has one attribute per field.

    Raises:
        TypeError: ``cls`` is not a dataclass, or a field type is not supported.
    """
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    if parser is None:
        summary = (cls.__doc__ or "").strip().splitlines()
        parser = argparse.ArgumentParser(
            prog=prog, description=description or (summary[0] if summary else None)
        )
    hints = get_type_hints(cls)
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        flag = "--" + field.name.replace("_", "-")
        kind, optional = _strip_optional(hints[field.name])
        help_text = field.metadata.get("help", "")
        required = (
            field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
        )
        default = None
        if field.default is not dataclasses.MISSING:
            default = field.default
        elif field.default_factory is not dataclasses.MISSING:
            default = field.default_factory()
        suffix = " (required)" if required else f" (default: {_describe_default(default)})"
        if "(default" in help_text:  # the help already explains its default
            suffix = ""
        kwargs: dict[str, Any] = {"dest": field.name, "help": help_text + suffix}
        if required:
            kwargs["required"] = True
        else:
            kwargs["default"] = default
        if kind is bool and not optional:
            kwargs["action"] = argparse.BooleanOptionalAction
        elif get_origin(kind) is Literal:
            choices = get_args(kind)
            kwargs["choices"] = choices
            kwargs["type"] = _scalar(type(choices[0]), optional)
            kwargs["metavar"] = "{" + ",".join(map(str, choices)) + "}"
        elif get_origin(kind) is tuple:
            args = get_args(kind)
            if len(args) != 2 or args[1] is not Ellipsis:
                raise TypeError(f"only tuple[X, ...] fields are supported, got {kind!r}")
            kwargs["type"] = _scalar(args[0], False)
            kwargs["nargs"] = "+"
            kwargs["metavar"] = args[0].__name__.upper()
        else:
            kwargs["type"] = _scalar(kind, optional)
            kwargs["metavar"] = field.name.upper()
        parser.add_argument(flag, **kwargs)
    return parser


def parse_config(cls: type[C], argv: Sequence[str] | None = None, prog: str | None = None) -> C:
    """Parses ``argv`` into an instance of the config dataclass ``cls``.

    Raises:
        SystemExit: On ``--help`` (status 0) or a usage error (status 2), as argparse does.
        ConfigError: The values fail the config's own ``__post_init__`` checks.
    """
    namespace = build_parser(cls, prog=prog).parse_args(argv)
    values = {f.name: getattr(namespace, f.name) for f in dataclasses.fields(cls) if f.init}
    for name, value in values.items():
        if isinstance(value, list):
            values[name] = tuple(value)
    return cls(**values)


# -- JSON round trip -------------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    return value


def config_to_dict(config: Any) -> dict[str, Any]:
    """The config as a JSON-ready dict (paths as strings, tuples as lists)."""
    return {f.name: _jsonable(getattr(config, f.name)) for f in dataclasses.fields(config)}


def config_from_dict(cls: type[C], values: Mapping[str, Any]) -> C:
    """Rebuilds a config from :func:`config_to_dict` output; unknown keys are ignored.

    Fields missing from ``values`` take their defaults (older checkpoints stay loadable).
    """
    hints = get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        if field.name not in values:
            continue
        value = values[field.name]
        kind, _ = _strip_optional(hints[field.name])
        if value is not None and kind is Path:
            value = Path(value)
        elif value is not None and get_origin(kind) is tuple:
            value = tuple(value)
        kwargs[field.name] = value
    return cls(**kwargs)
