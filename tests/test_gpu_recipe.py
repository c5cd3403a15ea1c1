"""``scripts/gpu_masp_recipe.py`` offline: argument validation and a plan whose commands parse.

The recipe itself needs a CUDA GPU and vLLM; here every ``dialogue-gym`` command of its plan is
parsed by the real parsers (so a renamed or mistyped option fails this test), and a real run
without a GPU stops in the preflight check before starting anything.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from dialogue_gym.cli.commands import _parser
from dialogue_gym_agents.common.config import parse_config
from dialogue_gym_agents.masp.config import MASPConfig
from dialogue_gym_agents.sft.lora import LoraSFTConfig

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu_masp_recipe.py"


@pytest.fixture(scope="module")
def recipe() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_masp_recipe", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("size", ["0.6b", "4b"])
def test_every_command_of_the_plan_parses(recipe: ModuleType, size: str, tmp_path: Path) -> None:
    args = recipe.parse_args(["--size", size, "--model", "models/Qwen3", "--dry-run"])
    plan = recipe.build_plan(args)
    phases = [phase for phase, _ in plan]
    assert phases[0].startswith("1a") and phases[-1].startswith("4d") and "STOP" in phases
    seen = set()
    for _, argv in plan:
        if not argv:
            continue
        if argv[:3] == ["dialogue-gym", "train", "sft"]:
            config = parse_config(LoraSFTConfig, argv[3:])
            assert config.method == "lora" and config.dtype == "bfloat16"
            assert config.device == "cuda" and config.temperature == 0.75
            seen.add(f"sft-{config.seat}")
        elif argv[:3] == ["dialogue-gym", "train", "masp"]:
            config = parse_config(MASPConfig, argv[3:])
            assert config.policy == "lm" and config.opponent == "policy" and config.update_user
            assert config.gamma == 0.97 and config.eval_temperature == 0.3
            assert config.system_init.endswith("sft-system")
            assert config.user_init.endswith("sft-user")
            assert config.rollout_backend == "openai:p4g-system"
            assert config.base_url == "http://127.0.0.1:8000/v1"
            seen.add("masp")
        elif argv[0] == "dialogue-gym":
            namespace = _parser().parse_args(argv[1:])
            seen.add(namespace.command)
        else:
            assert argv[:2] == ["vllm", "serve"] and "--enable-lora" in argv
            assert argv[argv.index("--max-lora-rank") + 1] == str(recipe.LORA_R)
            seen.add("vllm")
    assert seen == {"sft-system", "sft-user", "masp", "eval", "report", "vllm"}


def test_dry_run_prints_the_plan(recipe: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert recipe.main(["--size", "4b", "--model", "models/Qwen3-4B", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "Qwen/Qwen3-4B" in out and "GPU memory (estimate" in out
    assert "Tables 11-12 values are not available" in out
    assert out.count("dialogue-gym train") == 3 and out.count("vllm serve") == 2


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--size", "7b", "--model", "m", "--dry-run"], "invalid choice"),
        (["--size", "4b", "--model", "m", "--group-size", "1", "--dry-run"], "--group-size"),
        (["--size", "4b", "--model", "m", "--iterations", "0", "--dry-run"], "--iterations"),
        (["--size", "4b", "--model", "m", "--port", "70000", "--dry-run"], "--port"),
        (["--size", "4b", "--model", "/nonexistent/qwen"], "not a local model folder"),
    ],
)
def test_bad_arguments_are_usage_errors(
    recipe: ModuleType, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        recipe.parse_args(argv)
    assert info.value.code == 2 and message in capsys.readouterr().err


def test_a_real_run_without_a_gpu_stops_before_starting_anything(
    recipe: ModuleType, tmp_path: Path
) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: this checks the CPU-only refusal")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    out = tmp_path / "run"
    argv = ["--size", "0.6b", "--model", str(model), "--data", str(tmp_path), "--out", str(out)]
    with pytest.raises(SystemExit, match="no CUDA GPU"):
        recipe.main(argv)
    assert not out.exists()
