"""``python -m agentsum``: the ``agentsum`` command."""

import sys

from agentsum.cli import main

sys.exit(main())
