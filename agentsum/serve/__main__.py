"""``python -m agentsum.serve --checkpoint CKPT ...``: the server without the ``agentsum`` command
(the same options as ``agentsum serve``)."""

import argparse
import sys

from agentsum.serve.options import add_arguments
from agentsum.checkpoint import CheckpointError
from agentsum.config import ConfigError


def main(argv: list[str] | None = None) -> int:
    from agentsum.serve.app import run

    parser = argparse.ArgumentParser(prog="python -m agentsum.serve", description="Serve a checkpoint over HTTP.")
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except (CheckpointError, ConfigError) as e:
        print(f"agentsum serve: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
