"""``python -m neardup`` and the ``neardup`` command: the CLI, with Ctrl-C during start-up answered
like Ctrl-C during a command (one line, exit 130) instead of a traceback from an import."""

import sys


def run() -> None:
    try:
        from .cli.main import main
    except KeyboardInterrupt:
        sys.stderr.write("neardup: interrupted\n")
        sys.exit(130)
    main()


if __name__ == "__main__":  # not in the processes multiprocessing spawns (a Dask LocalCluster)
    run()
