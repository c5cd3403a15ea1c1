"""Agents for dialogue_gym, one folder per method, registered through entry points.

Layout (each method folder reads top to bottom: its agent, its config, its trainer)::

    baselines/   hand-written agents: random, scripted per task family, the bad agents
                 (pushy, dismissive, lowball), stall, the shared concern-listening core
    sft/         behaviour cloning from a corpus: retrieval (nearest neighbour) and lora
                 (LoRA causal LM); warm_start loads an sft-lora checkpoint as an LM policy
    planner/     strategy planner: features + policy network, supervised pretraining, PPO
    masp/        mentalization-aware self-play: mentalizers, silver data, strategy and LM
                 policies behind one parameterization interface, warm starts, self-play
    siavpo/      SI-AVPO: a student view trained against a privileged teacher view
    lm_grpo/     GRPO of an LM policy in one env seat
    common/      what every method shares: configs, command line, checkpoints, tracking,
                 seeding, RL and GRPO math, the GRPO policy/seat interface, self-play
                 rollouts, LM utilities (model loading, prompts, the LM policy and agent)
    training/    the training corpora (task → corpus, splits, strategy label maps)
    dispatch.py  task-dispatching names (scripted, pushy, dismissive, lowball, stall)
    scaffold.py  the close-injection scaffold around any system agent

The dependency order is ``common`` → ``baselines``, ``sft``, ``planner`` → ``masp``, ``siavpo``,
``lm_grpo``, with no import cycles (``tests/test_agent_import_graph.py`` walks the imports).
Registration is explicit, never an import side effect: agent names and trainers are the
``dialogue_gym.agents`` and ``dialogue_gym.trainers`` entry points in ``agents/pyproject.toml``,
SFT methods the :data:`~dialogue_gym_agents.sft.train.SFT_METHODS` table, MASP
parameterizations the :data:`~dialogue_gym_agents.masp.parameterization.PARAMETERIZATIONS`
table. Importing this package is cheap (no torch).
"""

from dialogue_gym_agents.baselines.persuasion import PushyAgent, RandomAgent, ScriptedPersuader

__all__ = ["PushyAgent", "RandomAgent", "ScriptedPersuader"]
