"""The ``--engine``, ``--scheduler`` and ``--partitions`` options, and the engine they choose.

``--engine local`` (default) runs on this machine's threads (``--workers``); ``--engine dask``
runs on a ``dask.distributed`` cluster: the scheduler at ``--scheduler ADDRESS``
(``tcp://host:8786``), or a new LocalCluster of ``--workers`` worker processes (default: one per
core) that lives as long as the command. ``--partitions`` sets how many pieces the input is read
in by the workers (byte ranges of large JSONL files, whole files otherwise) and the shuffle
buckets of the candidate stage (default: 4 per worker thread, and one per 32 MB of input).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click

from ..core.errors import NeardupError
from .groups import option

__all__ = ["MEMORY", "add_engine_options", "add_memory_options", "chosen_engine"]


class _Size(click.ParamType):
    """A size in bytes: ``2GB``, ``512MiB``, ``800000000``."""

    name = "SIZE"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        from ..core.budget import parse_size

        try:
            return parse_size(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


MEMORY = _Size()


def add_memory_options(command: Callable) -> Callable:
    """Decorate a click command with ``--memory`` and ``--tmp-dir`` (the job's budget; with
    ``--engine dask`` split between the driver and the workers: :func:`chosen_engine`)."""
    options = [
        option(
            "--memory",
            group="Engine",
            type=MEMORY,
            default=None,
            help="Memory budget of the job (2GB, 512MiB); past it, what grows with the collection goes to "
            "unnamed files under --tmp-dir, with the same result [default: half the available memory].",
        ),
        option(
            "--tmp-dir",
            group="Engine",
            type=click.Path(file_okay=False),
            default=None,
            help="Folder for what goes past --memory [default: the system's temporary folder].",
        ),
    ]
    for decorate in reversed(options):
        command = decorate(command)
    return command


def add_engine_options(command: Callable) -> Callable:
    """Decorate a click command with the engine options."""
    options = [
        option(
            "--engine",
            group="Engine",
            type=click.Choice(["local", "dask"]),
            default="local",
            show_default=True,
            help="Where the job runs: this machine's threads, or a dask.distributed cluster (pip install "
            "'neardup[dask]'); the answer is the same.",
        ),
        option(
            "--scheduler",
            group="Engine",
            default=None,
            metavar="ADDRESS",
            help="With --engine dask: the scheduler to use (tcp://host:8786) [default: a LocalCluster of "
            "--workers processes].",
        ),
        option(
            "--partitions",
            group="Engine",
            type=click.IntRange(min=1),
            default=None,
            help="With --engine dask: input partitions the workers read (byte ranges of large JSONL files, whole "
            "files otherwise) and shuffle buckets of the candidate stage [default: 4 per worker thread, at least "
            "one per 32 MB of input].",
        ),
    ]
    for decorate in reversed(options):
        command = decorate(command)
    return command


@contextmanager
def chosen_engine(
    engine: str,
    scheduler: str | None,
    partitions: int | None,
    workers: int | None,
    memory: str | None = None,
    tmp_dir: str | None = None,
) -> Iterator:
    """The engine to pass to :func:`neardup.dedup` (None: the local engine with ``workers``).
    With ``--engine dask``, ``memory`` is the job's budget: on a LocalCluster an eighth to this
    process and the rest split between the workers as their memory limit
    (:func:`~neardup.engine.dask_engine.split_memory`); with ``--scheduler``, this process's
    alone (the workers keep to their cluster's limit)."""
    if engine == "local":
        if scheduler is not None or partitions is not None:
            raise click.UsageError("--scheduler and --partitions need --engine dask")
        yield None
        return
    try:
        from dask.distributed import Client
    except ImportError as exc:
        raise NeardupError("--engine dask needs dask.distributed: pip install 'neardup[dask]'") from exc
    from ..engine.dask_engine import DaskEngine, local_client, split_memory

    if scheduler is not None:
        if workers is not None:
            raise click.UsageError("--workers sets the LocalCluster's size; with --scheduler the cluster has its own")
        client = Client(scheduler)
        try:
            yield DaskEngine(client, partitions=partitions, memory=memory, tmp_dir=tmp_dir)
        finally:
            client.close()
        return
    import dask

    from ..api import default_workers

    # a worker lost (killed, out of memory) is started again by its nanny; the LocalCluster
    # closes the nanny for good if the new worker has not registered within this time (15 s by
    # default), which a loaded machine, or this process holding the GIL, can exceed
    with dask.config.set({"distributed.deploy.lost-worker-timeout": "300s"}):
        driver, limit = (None, "auto") if memory is None else split_memory(memory, workers or default_workers())
        client = local_client(workers or default_workers(), memory_limit=limit, spill_only=memory is not None)
        try:
            yield DaskEngine(client, partitions=partitions, memory=driver, tmp_dir=tmp_dir)
        finally:
            cluster = client.cluster
            client.close()
            cluster.close()
