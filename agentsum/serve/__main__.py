"""``python -m agentsum.serve --checkpoint CKPT``: the server without the ``agentsum`` command."""

from agentsum.serve.app import main

raise SystemExit(main())
