"""``python -m neardup`` and the ``neardup`` command: the CLI, with Ctrl-C answered with one line
and exit 130 from the first instant (not a traceback from an import, nor click's "Aborted!" and 1).

Commands that write outputs replace this handler while they run (``cli.safety.interrupts``) so that
their temporary files are removed on the way out; before and after that, nothing is half-written,
so the process ends at once.
"""

import os
import signal
import sys


def _interrupted(signum, frame) -> None:
    try:
        sys.stderr.write("neardup: interrupted\n")
        sys.stderr.flush()
    finally:
        os._exit(130)


def run() -> None:
    signal.signal(signal.SIGINT, _interrupted)
    from ._kernels.blas_probe import skip_in_this_process

    skip_in_this_process()  # 0.3 s of every command where SciPy is installed; this process runs only neardup
    threads = os.environ.get("NUMBA_NUM_THREADS")
    if threads is not None and not (threads.strip().isdigit() and int(threads) > 0):
        sys.stderr.write(
            f"neardup: error: NUMBA_NUM_THREADS={threads!r}: the number of threads must be a whole number, "
            "1 or more (unset it for one per core)\n"
        )
        sys.exit(2)
    try:
        from .cli.main import main
    except ValueError as exc:  # numba checks its environment variables at import
        sys.stderr.write(f"neardup: error: cannot start: {exc}\n")
        sys.exit(2)

    main()


if __name__ == "__main__":  # not in the processes multiprocessing spawns (a Dask LocalCluster)
    run()
