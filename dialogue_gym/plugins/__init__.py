"""The shipped tasks' plug-ins: one module per task, named by its card's ``[task] plugin``.

* :mod:`dialogue_gym.plugins.p4g` — Persuasion for Good (``envs/p4g.toml``);
* :mod:`dialogue_gym.plugins.esconv` — ESConv (``envs/esconv.toml``).

The generic core never imports these modules; :mod:`dialogue_gym.task_plugin` imports the one
a card names when one of its hooks is first asked for. Nothing is imported here.
"""
