"""A colossus-scale app for the cooling/power/fabric/jobs browser tests.

The hub serves one tick of the real twin engine on the colossus site (default job
placed) and its tick detail; ``hub.snapshot`` can be swapped to simulate a new tick.
Import the fixture into a test module: ``from tests.dashboard.colossus_app import colossus_app``.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from tests.dashboard import page_snapshots

LIVE_TICK_MS = 700


@pytest.fixture(scope="module")
def colossus_app(dash_app):
    """``(served app, hub)`` for colossus; served from a thread like the demo app.

    Dash hands the inline scripts of clientside callbacks (the pages' URL writers) to
    whichever app renders its index page first.  The session's demo app renders its
    index before this app exists, and this app right after it is created, so each
    takes its own scripts.
    """
    dash_app.server.test_client().get("/")
    from tests.dashboard.conftest import ServedApp
    from tests.dashboard.standin_hub import StandinView, standin_app

    state, snap, detail = page_snapshots.engine_snapshot("colossus")
    snap = replace(snap, ts=datetime.now(UTC), source_age_s={"twin": 0.5})  # fresh, so the page is not greyed
    hub = StandinView(state, snap, detail=detail)
    app = standin_app(hub, tick_ms=LIVE_TICK_MS)
    app.server.test_client().get("/")
    served = ServedApp(app)
    yield served, hub
    served.stop()


def freshen(hub, **changes) -> None:
    """Serve a copy of the snapshot stamped now (a new tick), with ``changes`` applied."""
    hub.snapshot = replace(hub.snapshot, ts=datetime.now(UTC), **changes)
