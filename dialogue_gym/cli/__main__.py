"""``python -m dialogue_gym.cli``: the ``dialogue-gym`` command."""

import sys

from dialogue_gym.cli.commands import main

sys.exit(main())
