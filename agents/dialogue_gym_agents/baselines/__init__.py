"""Hand-written agents: no training, no checkpoint; the floor every learned agent must beat.

One module per task family, each readable on its own:

- :mod:`~dialogue_gym_agents.baselines.persuasion` — ``random`` (:class:`RandomAgent`, a random
  strategy's template on any task), the P4G scripted persuader and the ``pushy`` bad agent.
- :mod:`~dialogue_gym_agents.baselines.listening` — the concern-listening core the scripted
  persuader and sales agents share (ask, hear the worry, answer it).
- :mod:`~dialogue_gym_agents.baselines.support` — ESConv: the scripted supporter, and the
  ``dismissive`` bad agent of ESConv and ED.
- :mod:`~dialogue_gym_agents.baselines.empathetic` — ED: the scripted listener.
- :mod:`~dialogue_gym_agents.baselines.reflection` — reading the user's words back to it, for
  the supporter and the listener.
- :mod:`~dialogue_gym_agents.baselines.sales` — Merchant and Courier: scripted and pushy sales.
- :mod:`~dialogue_gym_agents.baselines.bargain` — CB: scripted and ``lowball`` buyers.
- :mod:`~dialogue_gym_agents.baselines.stall` — ``stall``: each scripted agent without the ask.

The task-dispatching names (``scripted``, ``pushy``, ``dismissive``, ``lowball``, ``stall``)
map a task id to one of these classes in :mod:`dialogue_gym_agents.dispatch`.
"""

from dialogue_gym_agents.baselines.persuasion import PushyAgent, RandomAgent, ScriptedPersuader

__all__ = ["PushyAgent", "RandomAgent", "ScriptedPersuader"]
