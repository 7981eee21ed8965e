"""``neardup serve``: the HTTP API over a durable index (FastAPI on uvicorn).

One process serves a SQLite index (its one writer); an index in Redis may be served by
``--workers N`` processes (uvicorn's supervisor; each worker opens the index from the settings
the parent leaves in :data:`~neardup.service.worker.SETTINGS_ENV`) or by several ``serve``
processes on several machines behind a load balancer.
"""

from __future__ import annotations

import os
import sys

import click

from .common import EXIT_DATA_ERROR, SETTINGS

EXIT_USAGE = 2


def _token(token_file: str | None) -> str | None:
    """The bearer token writes need, from ``--token-file`` or ``NEARDUP_TOKEN`` (None: none given);
    a file that cannot be read, an empty one or a token HTTP clients cannot send is one line on
    stderr and exit 2."""
    if token_file is not None:
        try:
            with open(token_file, encoding="utf-8") as f:
                token = f.read().strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            _usage_line(f"--token-file {token_file}: cannot read it ({reason})")
        if not token:
            _usage_line(f"--token-file {token_file} is empty")
        where = f"the token in {token_file}"
    else:
        token = os.environ.get("NEARDUP_TOKEN") or None
        where = "NEARDUP_TOKEN"
    if token is not None and not _token_chars(token):
        _usage_line(
            f"{where} must be printable ASCII without spaces (HTTP clients send headers as ASCII; "
            "a token of letters, digits and -._~+/= works everywhere)"
        )
    return token


def _usage_line(message: str) -> None:
    click.echo(f"neardup: error: {message}", err=True)
    sys.exit(EXIT_USAGE)


def _token_chars(token: str) -> bool:
    """Printable ASCII without spaces: what every HTTP client sends in a header unchanged."""
    return all(33 <= ord(c) <= 126 for c in token)


@click.command("serve", context_settings=SETTINGS)
@click.argument("path")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (0.0.0.0: every interface).")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True, help="Port to listen on.")
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Server processes. An index in Redis (redis://...) may be served by several; an index file has "
    "one writer, so a SQLite index is served by one process (writes run on a thread pool, queries on its event loop).",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="File holding the bearer token that writes need [default: $NEARDUP_TOKEN; without one, writes are refused].",
)
@click.option("--auth-reads", is_flag=True, help="Queries and reads need the token too.")
@click.option(
    "--max-body-bytes",
    type=click.IntRange(min=1),
    default=16 * 2**20,
    show_default=True,
    help="Largest request body (413 above).",
)
@click.option(
    "--max-batch",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
    help="Most documents per request (422 above).",
)
@click.option(
    "--max-text-chars",
    type=click.IntRange(min=1),
    default=1_000_000,
    show_default=True,
    help="Longest text (422 above).",
)
@click.option(
    "--allowed-hosts",
    default=None,
    metavar="NAMES",
    help="Comma-separated names the Host header may give besides --host's own (a loopback --host also "
    "answers to 127.0.0.1, localhost and ::1; --host 0.0.0.0 to any name unless this is given; '*': any). "
    "Other names are answered with 421, so a web page cannot read the index through a browser by "
    "DNS rebinding.",
)
@click.option(
    "--header-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    help="Seconds a request's headers may take to arrive (408 and the connection closed after).",
)
@click.option(
    "--body-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=60.0,
    show_default=True,
    help="Seconds a request's body may take to arrive once its headers are in (408 after).",
)
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    default="info",
    show_default=True,
)
@click.option(
    "--access-log/--no-access-log",
    default=True,
    show_default=True,
    help="A line per request at --log-level info (uvicorn's access log; it costs about 60-140 microseconds "
    "of CPU a request, as much as the query itself: see docs/service.md).",
)
def serve_cmd(
    path,
    host,
    port,
    workers,
    token_file,
    auth_reads,
    max_body_bytes,
    max_batch,
    max_text_chars,
    allowed_hosts,
    header_timeout,
    body_timeout,
    log_level,
    access_log,
):
    """Serve the index at PATH over HTTP: POST /v1/query, POST /v1/documents (if_unique for an atomic
    check-and-add), GET and DELETE /v1/documents/{id}, GET /v1/stats, /healthz, /readyz; the
    OpenAPI description at /docs.

    \b
    Example:
      NEARDUP_TOKEN=secret neardup serve news.ndx --port 8080
      curl -s localhost:8080/v1/query -H 'content-type: application/json' \\
           -d '{"documents": [{"text": "some article text"}], "limit": 3}'

    SIGTERM or Ctrl-C drains the requests in flight and exits 0.
    """
    try:
        import uvicorn

        from ..service.app import Limits, allowed_hosts_for, create_app, freeze_heap
        from ..service.timeouts import timed_config
        from ..service.worker import SETTINGS_ENV, settings_json
    except ImportError as exc:
        click.echo(
            f"neardup: error: `neardup serve` needs the service extra: pip install 'neardup[service]' ({exc})", err=True
        )
        sys.exit(EXIT_DATA_ERROR)
    from ..core.errors import NeardupError
    from ..index.durable import DurableIndex
    from ..index.redis_store import is_redis_url, shown_path

    if workers > 1 and not is_redis_url(path):
        raise click.UsageError(
            "--workers > 1 needs a store shared by processes: an index in Redis (redis://HOST:PORT/DB/NAME); "
            "a SQLite index has one writer process (queries take tens of microseconds of it each)"
        )
    token = _token(token_file)
    hosts = allowed_hosts_for(host, allowed_hosts)
    # above info no access line is written, but uvicorn still builds each line's arguments (the
    # client's address, the path) before the logger drops it: ~5% of a single query's CPU
    access_log = access_log and log_level in ("info", "debug")
    try:
        index = DurableIndex.open(path, "a")
    except (NeardupError, OSError, ValueError) as exc:
        click.echo(f"neardup: error: {shown_path(str(exc))}", err=True)
        sys.exit(EXIT_DATA_ERROR)
    limits = Limits(max_body_bytes=max_body_bytes, max_batch=max_batch, max_text_chars=max_text_chars)
    if token is None:
        click.echo("neardup: no token (NEARDUP_TOKEN or --token-file): writes are refused", err=True)
    if workers > 1:
        index.close()  # opened to check it; each worker opens its own
        os.environ[SETTINGS_ENV] = settings_json(path, token, limits, auth_reads, hosts)
        config = uvicorn.Config(
            "neardup.service.worker:app_from_env",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            log_level=log_level,
            access_log=access_log,
            timeout_graceful_shutdown=30,
        )
        sys.exit(_run_workers(timed_config(config, header_timeout, body_timeout)))
    app = create_app(index, token=token, limits=limits, auth_reads=auth_reads, allowed_hosts=hosts)
    freeze_heap()
    config = uvicorn.Config(
        app, host=host, port=port, log_level=log_level, access_log=access_log, timeout_graceful_shutdown=30
    )
    server = _draining_server(timed_config(config, header_timeout, body_timeout))
    try:
        server.run()
    except SystemExit:  # uvicorn's exit 3 when it cannot listen (its one-line error is logged)
        if server.started:
            raise
    finally:
        index.close()
    sys.exit(0 if server.started else EXIT_DATA_ERROR)


def _run_workers(config) -> int:
    """uvicorn's supervisor over ``config.workers`` processes; SIGTERM or Ctrl-C drains them all.
    The exit status: 0, or 1 when no worker could start."""
    from uvicorn.supervisors import Multiprocess

    sock = config.bind_socket()
    supervisor = Multiprocess(config, sockets=[sock])
    try:
        supervisor.run()
    finally:
        sock.close()
    failed = [p for p in supervisor.processes if p.exitcode == 3]  # uvicorn's STARTUP_FAILURE
    return EXIT_DATA_ERROR if failed and len(failed) == len(supervisor.processes) else 0


def _draining_server_class():
    import contextlib
    import signal

    import uvicorn

    class DrainingServer(uvicorn.Server):
        """uvicorn's server, but SIGTERM and SIGINT end it with exit status 0 after the requests in
        flight are answered (uvicorn re-raises the signal after draining, which kills the process
        with the signal's status)."""

        @contextlib.contextmanager
        def capture_signals(self):
            previous = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    return DrainingServer


def _draining_server(config):
    """A :class:`DrainingServer` (its class is made on first use: uvicorn is an optional dependency)."""
    return _draining_server_class()(config)
