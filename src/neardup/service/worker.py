"""The app of one ``neardup serve --workers N`` process: its settings come from the environment.

uvicorn starts each worker as a fresh process that imports :func:`app_from_env`; the parent
(``neardup serve``) leaves the index path, token, limits and read policy in the environment
variable :data:`SETTINGS_ENV` (inherited by the workers only). Each worker opens the index
itself, so only a store shared by processes (Redis) is served this way.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict

from fastapi import FastAPI

from ..index.durable import DurableIndex
from .app import Limits, create_app, freeze_heap

__all__ = ["SETTINGS_ENV", "app_from_env", "settings_json"]

SETTINGS_ENV = "NEARDUP_SERVE_SETTINGS"


def settings_json(
    path: str, token: str | None, limits: Limits, auth_reads: bool, allowed_hosts: frozenset[str] | None = None
) -> str:
    """The settings of the workers, as :func:`app_from_env` reads them."""
    hosts = None if allowed_hosts is None else sorted(allowed_hosts)
    return json.dumps(
        {"path": path, "token": token, "limits": asdict(limits), "auth_reads": auth_reads, "allowed_hosts": hosts}
    )


def app_from_env() -> FastAPI:
    """The API over the index named in :data:`SETTINGS_ENV`, opened for writing by this process."""
    raw = os.environ.get(SETTINGS_ENV)
    if not raw:
        raise RuntimeError(f"{SETTINGS_ENV} is not set: start the workers with `neardup serve --workers N`")
    settings = json.loads(raw)
    index = DurableIndex.open(settings["path"], "a")
    hosts = settings.get("allowed_hosts")
    app = create_app(
        index,
        token=settings["token"],
        limits=Limits(**settings["limits"]),
        auth_reads=settings["auth_reads"],
        allowed_hosts=None if hosts is None else frozenset(hosts),
    )
    freeze_heap()
    return app
