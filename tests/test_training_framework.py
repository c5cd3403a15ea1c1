"""The training framework of ``dialogue-gym-agents``: configs, seeds, logs, checkpoints, math."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Literal

import numpy as np
import pytest
import torch

from dialogue_gym.cards.card import load_card
from dialogue_gym_agents.common import tracking
from dialogue_gym_agents.common.checkpoint import (
    MANIFEST,
    CheckpointError,
    CheckpointMismatchError,
    CheckpointNotFoundError,
    CheckpointWriter,
    CorruptCheckpointError,
    ModelNotFoundError,
    check_backend_spec,
    load_checkpoint,
    resolve_model_path,
)
from dialogue_gym_agents.common.config import (
    TrainConfig,
    build_parser,
    config_from_dict,
    config_to_dict,
    option,
    parse_config,
)
from dialogue_gym_agents.common.rl import (
    discounted_returns,
    episode_outcomes,
    group_advantages,
    normalize_advantages,
)
from dialogue_gym_agents.common.seeding import derive_seed, generators, isolated_global_rng
from dialogue_gym_agents.common.tracking import RunLogger, read_scalars


@dataclasses.dataclass
class DemoConfig(TrainConfig):
    """A demo trainer."""

    steps: int = option(10, "environment steps")
    rate: float = option(0.5, "a rate")
    mode: Literal["a", "b"] = option("a", "a choice")
    sizes: tuple[int, ...] = option((4, 4), "layer widths")
    limit: float | None = option(None, "an optional limit")
    fast: bool = option(True, "go fast")

    def __post_init__(self) -> None:
        if self.steps < 0:
            raise ValueError("--steps must be >= 0")


# -- config ------------------------------------------------------------------------------------


def test_parser_documents_every_field() -> None:
    text = build_parser(DemoConfig, prog="demo").format_help()
    for field in dataclasses.fields(DemoConfig):
        flag = "--" + field.name.replace("_", "-")
        assert flag in text
        assert field.metadata["help"].split("(")[0].strip()[:20] in " ".join(text.split())
    assert "A demo trainer." in text and "(required)" in text and "(default: 10)" in text


def test_parse_config_types(tmp_path: Path) -> None:
    argv = ["--task", "P4G", "--out", str(tmp_path / "x"), "--steps", "7", "--rate", "0.25"]
    argv += ["--mode", "b", "--sizes", "8", "16", "--limit", "2.5", "--no-fast"]
    config = parse_config(DemoConfig, argv)
    assert config.out == tmp_path / "x" and isinstance(config.out, Path)
    assert (config.steps, config.rate, config.mode, config.sizes) == (7, 0.25, "b", (8, 16))
    assert config.limit == 2.5 and config.fast is False and config.seed == 0
    again = parse_config(DemoConfig, ["--task", "P4G", "--out", "o", "--limit", "none"])
    assert again.limit is None and again.fast is True
    assert config_from_dict(DemoConfig, json.loads(json.dumps(config_to_dict(config)))) == config


@pytest.mark.parametrize(
    "argv",
    [
        ["--out", "o"],  # --task is required
        ["--task", "P4G", "--out", "o", "--steps", "many"],
        ["--task", "P4G", "--out", "o", "--mode", "c"],
    ],
)
def test_parse_config_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_config(DemoConfig, argv)
    assert exc.value.code == 2
    assert "error" in capsys.readouterr().err


def test_post_init_checks_run() -> None:
    with pytest.raises(ValueError, match="--steps"):
        parse_config(DemoConfig, ["--task", "P4G", "--out", "o", "--steps", "-1"])


# -- seeding -------------------------------------------------------------------------------------


def test_generators_are_reproducible_and_private() -> None:
    np.random.seed(123)
    before = np.random.random()
    a, b = generators(5), generators(5)
    assert a.numpy.random() == b.numpy.random()
    assert torch.equal(torch.rand(3, generator=a.torch), torch.rand(3, generator=b.torch))
    assert generators(6).numpy.random() != generators(5).numpy.random()
    np.random.seed(123)
    assert np.random.random() == before  # the global state was never touched
    assert derive_seed(0, "ppo") != derive_seed(0, "pretrain") and derive_seed(0, "x") >= 0
    with pytest.raises(ValueError):
        generators(-1)


def test_isolated_global_rng_restores_the_global_states() -> None:
    random.seed(1)
    np.random.seed(1)
    torch.manual_seed(1)
    expected = (random.random(), np.random.random(), float(torch.rand(1)))
    random.seed(1)
    np.random.seed(1)
    torch.manual_seed(1)
    with isolated_global_rng(7):
        inside = (random.random(), np.random.random(), float(torch.rand(1)))
    with isolated_global_rng(7):
        assert (random.random(), np.random.random(), float(torch.rand(1))) == inside
    assert (random.random(), np.random.random(), float(torch.rand(1))) == expected


# -- logging -------------------------------------------------------------------------------------


def test_run_logger_writes_csv(tmp_path: Path) -> None:
    with RunLogger(tmp_path, tensorboard=False) as log:
        log.log("loss", 1.5, 0)
        log.log_dict({"sr": 0.25, "rcsr": 0.125}, 3, prefix="ppo/")
    rows = read_scalars(tmp_path)
    assert rows == [(0, "loss", 1.5), (3, "ppo/sr", 0.25), (3, "ppo/rcsr", 0.125)]
    assert read_scalars(tmp_path, "ppo/sr") == [(3, "ppo/sr", 0.25)]
    assert not (tmp_path / tracking.TB_DIR).exists()


def test_tensorboard_when_installed_else_one_notice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(tracking, "_TB_NOTICE_SHOWN", False)
    try:
        import torch.utils.tensorboard  # noqa: F401
    except ImportError:
        for name in ("a", "b"):
            with RunLogger(tmp_path / name) as log:
                log.log("x", 1.0, 0)
        assert capsys.readouterr().err.count("TensorBoard logging is off") == 1
        assert read_scalars(tmp_path / "b") == [(0, "x", 1.0)]
    else:
        with RunLogger(tmp_path) as log:
            log.log("x", 1.0, 0)
        assert any((tmp_path / tracking.TB_DIR).iterdir())


# -- checkpoints ---------------------------------------------------------------------------------


def _write(out: Path, kind: str = "demo", card_name: str = "p4g", **kwargs: object) -> Path:
    card = load_card(card_name)
    with CheckpointWriter(out, **kwargs) as writer:  # type: ignore[arg-type]
        (writer.path / "weights.bin").write_bytes(b"\x00\x01weights")
        (writer.path / "log.txt").write_text("not verified")
        return writer.commit(kind, card, {"lr": 0.1}, ["weights.bin"], info={"note": 1})


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_checkpoint_round_trip(tmp_path: Path) -> None:
    out = _write(tmp_path / "ckpt")
    assert _listing(tmp_path) == ["ckpt"]  # no staging folder left
    manifest = json.loads((out / MANIFEST).read_text())
    for key in ("kind", "task", "strategies", "config", "versions", "files", "content_hash"):
        assert key in manifest
    assert manifest["task"] == "P4G" and manifest["config"] == {"lr": 0.1}
    assert manifest["versions"]["dialogue_gym"] and manifest["versions"]["torch"]
    checkpoint = load_checkpoint(out, kind="demo", card=load_card("p4g"))
    assert checkpoint.file("weights.bin").read_bytes() == b"\x00\x01weights"
    assert checkpoint.strategies == load_card("p4g").strategy_names
    assert checkpoint.info == {"note": 1}


def test_failed_run_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="boom"), CheckpointWriter(tmp_path / "ckpt") as writer:
        (writer.path / "weights.bin").write_bytes(b"partial")
        raise RuntimeError("boom")
    assert _listing(tmp_path) == []
    with CheckpointWriter(tmp_path / "ckpt") as writer:  # left without commit
        (writer.path / "weights.bin").write_bytes(b"partial")
    assert _listing(tmp_path) == []


def test_staging_left_by_a_killed_run_is_removed(tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    stale = tmp_path / f".ckpt.partial-{int(dead.stdout)}-abcd"
    live = tmp_path / f".ckpt.partial-{os.getpid()}-efgh"  # another run still going
    for folder in (stale, live):
        folder.mkdir()
        (folder / "weights.bin").write_bytes(b"half")
    _write(tmp_path / "ckpt")
    assert _listing(tmp_path) == [live.name, "ckpt"]


def test_sigterm_during_a_run_cleans_up(tmp_path: Path) -> None:
    from dialogue_gym_agents.common.cli import _sigterm_as_exit

    before = signal.getsignal(signal.SIGTERM)
    with (
        pytest.raises(SystemExit) as exc,
        _sigterm_as_exit(),
        CheckpointWriter(tmp_path / "ckpt") as writer,
    ):
        (writer.path / "weights.bin").write_bytes(b"half")
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises before this ends
    assert exc.value.code == 128 + signal.SIGTERM
    assert _listing(tmp_path) == []
    assert signal.getsignal(signal.SIGTERM) is before


def test_existing_checkpoint_needs_overwrite(tmp_path: Path) -> None:
    out = _write(tmp_path / "ckpt")
    first = json.loads((out / MANIFEST).read_text())["created"]
    with pytest.raises(CheckpointError, match="--overwrite"):
        CheckpointWriter(out)
    _write(out, overwrite=True)
    assert _listing(tmp_path) == ["ckpt"] and json.loads((out / MANIFEST).read_text())["created"]
    assert first  # replaced in place, no backup left behind
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(CheckpointError, match="not a checkpoint folder"):
        CheckpointWriter(tmp_path / "mine", overwrite=True)
    (tmp_path / "empty").mkdir()
    _write(tmp_path / "empty")  # an empty folder is fine


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(CheckpointNotFoundError, match="planner:DIR"):
        load_checkpoint(None, kind="planner")
    with pytest.raises(CheckpointNotFoundError, match="does not exist"):
        load_checkpoint(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(CheckpointError, match="is a file"):
        load_checkpoint(tmp_path / "file")
    (tmp_path / "incomplete").mkdir()
    with pytest.raises(CorruptCheckpointError, match=r"checkpoint\.json is missing"):
        load_checkpoint(tmp_path / "incomplete")

    out = _write(tmp_path / "ckpt")
    with pytest.raises(CheckpointMismatchError, match="'demo' checkpoint, not a 'planner'"):
        load_checkpoint(out, kind="planner")
    with pytest.raises(CheckpointMismatchError, match="trained for task 'P4G', not 'ESConv'"):
        load_checkpoint(out, card=load_card("esconv"))
    card = load_card("p4g")
    shuffled = dataclasses.replace(card, strategies=card.strategies[::-1])
    with pytest.raises(CheckpointMismatchError, match="another order"):
        load_checkpoint(out, card=shuffled)
    fewer = dataclasses.replace(card, strategies=card.strategies[:-1])
    with pytest.raises(CheckpointMismatchError, match="proposition-of-donation"):
        load_checkpoint(out, card=fewer)
    load_checkpoint(out, card=fewer, check_strategies=False)


def test_corrupt_checkpoints(tmp_path: Path) -> None:
    out = _write(tmp_path / "a")
    (out / "weights.bin").write_bytes(b"\x00\x01weightz")
    with pytest.raises(CorruptCheckpointError, match="does not match its SHA-256"):
        load_checkpoint(out)
    out = _write(tmp_path / "b")
    (out / "weights.bin").unlink()
    with pytest.raises(CorruptCheckpointError, match=r"'weights\.bin' is missing"):
        load_checkpoint(out)
    out = _write(tmp_path / "c")
    (out / MANIFEST).write_text('{"format": "dialogue-gym-checkpoint", "kind": ')
    with pytest.raises(CorruptCheckpointError, match="not valid JSON"):
        load_checkpoint(out)
    out = _write(tmp_path / "d")
    manifest = json.loads((out / MANIFEST).read_text())
    manifest["files"]["weights.bin"] = "0" * 64
    (out / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(CorruptCheckpointError, match="content hash"):
        load_checkpoint(out)


def test_model_paths(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        resolve_model_path(tmp_path / "no-model")
    assert resolve_model_path(tmp_path) == tmp_path
    with pytest.raises(FileNotFoundError, match="no-model"):
        check_backend_spec(f"hf:{tmp_path / 'no-model'}")
    for fine in ("fake", "openai:gpt-4o-mini", "hf:smollm2", f"hf:{tmp_path}"):
        check_backend_spec(fine)


# -- math ----------------------------------------------------------------------------------------


def test_discounted_returns_and_advantages() -> None:
    returns = discounted_returns([1.0, 0.0, 2.0], gamma=0.5)
    assert np.allclose(returns, [1.0 + 0.5 * 0.0 + 0.25 * 2.0, 1.0, 2.0])
    with pytest.raises(ValueError):
        discounted_returns([1.0], gamma=1.5)
    normalized = normalize_advantages([1.0, 2.0, 3.0])
    assert abs(normalized.mean()) < 1e-9 and abs(normalized.std() - 1.0) < 1e-6
    assert np.allclose(normalize_advantages([4.0]), [0.0])
    grouped = group_advantages([1.0, 3.0, 10.0, 10.0], ["a", "a", "b", "b"])
    assert np.allclose(grouped[:2], [-1.0, 1.0], atol=1e-6) and np.allclose(grouped[2:], 0.0)
    with pytest.raises(ValueError):
        group_advantages([1.0], ["a", "b"])


def test_episode_outcomes() -> None:
    records = [
        {"success": True, "success_turn": 2, "q": [1, 1], "turns": 2},
        {"success": True, "success_turn": 2, "q": [-1, -1], "turns": 2},
        {"success": False, "success_turn": None, "q": [1] * 8, "turns": 8},
        {"success": True, "success_turn": 9, "q": [1] * 9, "turns": 9},  # past T
    ]
    outcome = episode_outcomes(records, T=8)
    assert outcome == {"episodes": 4.0, "sr": 0.5, "rcsr": 0.25, "turns": 5.25}
    assert episode_outcomes([], T=8)["sr"] == 0.0
