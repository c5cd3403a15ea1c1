"""Agent packages for dialogue_gym, registered through the ``dialogue_gym.agents`` entry points."""

from dialogue_gym_agents.baselines.persuasion import PushyAgent, RandomAgent, ScriptedPersuader

__all__ = ["PushyAgent", "RandomAgent", "ScriptedPersuader"]
