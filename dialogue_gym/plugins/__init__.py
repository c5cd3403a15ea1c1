"""The shipped tasks' plug-ins: one package per task, named by its card's ``[task] plugin``.

* :mod:`dialogue_gym.plugins.p4g` — Persuasion for Good (``envs/p4g.toml``);
* :mod:`dialogue_gym.plugins.esconv` — ESConv (``envs/esconv.toml``);
* :mod:`dialogue_gym.plugins.cb` — CraigslistBargain (``envs/cb.toml``);
* :mod:`dialogue_gym.plugins.ed` — EmpatheticDialogues (``envs/ed.toml``).

Each package holds everything of its task that a card cannot say as data: the corpus loader,
the calibration fitters and their shipped tables, a task's own user model. The generic core
never imports these packages; :mod:`dialogue_gym.cards.task_plugin` and
:mod:`dialogue_gym.plugin_index` import the one a card names when one of its hooks or tables
is first asked for. Nothing is imported here.
"""
