"""``clustertwin serve --prod``: the dashboard under gunicorn (gthread workers), never Flask's development server.

The worker class is :class:`dashboard.prod_worker.SlowClientWorker`: gthread, except that a
request is read whole (headers within 10 s, a body within 30 s) before a request thread
takes it, so slow clients cost no thread.

gunicorn's master process binds the socket and supervises ``workers`` worker processes;
each worker starts the live twin (the lease; ingest and the tick scheduler only in the
one that holds the lease, the others follow it through the database, see
:mod:`ingest.live.follower`) and serves requests from a pool of ``threads`` threads.  The twin is started in the worker, after the fork,
because the scheduler's threads would not survive a fork; on a clean stop (SIGTERM or
SIGINT to the master) the worker stops the twin and releases the ingest lease.

Every worker shows the same live state and shares acknowledgements (docs/deploy.md).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from gunicorn.app.base import BaseApplication

log = logging.getLogger(__name__)

DEFAULT_THREADS = 16
GRACEFUL_TIMEOUT_S = 15  # the twin's last tick, the lease release and open requests fit in this
KEEPALIVE_S = 5  # a dashboard polls every 1-2 s: keep its connection open between polls
WORKER_CONNECTIONS = 2048  # open connections per worker (slow ones included); beyond it, accepting pauses


def bind_address(host: str, port: int) -> str:
    """gunicorn's bind string: ``host:port``, an IPv6 address in brackets (``[::1]:8050``)."""
    host = host.strip()
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


class ProdServer(BaseApplication):
    """A gunicorn application whose WSGI app is built in the worker by ``start()``.

    ``start()`` returns ``(wsgi_app, stop)``; ``stop()`` runs when the worker exits.
    """

    def __init__(
        self,
        start: Callable[[], tuple[Callable, Callable[[], None]]],
        host: str,
        port: int,
        threads: int = DEFAULT_THREADS,
        workers: int = 1,
    ) -> None:
        self._start, self._stop = start, None
        self.options = {
            "bind": bind_address(host, port),
            "workers": workers,
            "worker_class": "dashboard.prod_worker.SlowClientWorker",
            "worker_connections": WORKER_CONNECTIONS,
            "threads": threads,
            "keepalive": KEEPALIVE_S,
            "graceful_timeout": GRACEFUL_TIMEOUT_S,
            "timeout": 60,
            "preload_app": False,
            "proc_name": "clustertwin-serve",
            "accesslog": None,
            "errorlog": "-",
            "loglevel": "warning",
            "worker_exit": self._worker_exit,
        }
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)

    def load(self):
        wsgi_app, self._stop = self._start()
        return wsgi_app

    def _worker_exit(self, _server, _worker) -> None:
        if self._stop is not None:
            self._stop()
            self._stop = None
