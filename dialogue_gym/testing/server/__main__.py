"""``python -m dialogue_gym.testing.server``: runs the test server (see :mod:`.cli`)."""

import sys

from dialogue_gym.testing.server.cli import main

if __name__ == "__main__":
    sys.exit(main())
