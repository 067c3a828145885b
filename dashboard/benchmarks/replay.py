"""Benchmark "replay_follow": does the browser follow a replay played at 20× (and 100×)?

The app (a demo live hub, so serving costs little besides the replay) is served from a
thread; headless Chromium opens ``/replay`` on the shipped colossus CDU-pump incident,
picks the speed and presses play.  A MutationObserver notes, in the page's own clock
(``performance.now()``), every change of the server-rendered instant (``#replay-instant``:
the moment every panel shows).  ``shown_speed_x_{speed}`` is replayed seconds per wall
second between the first and the last change seen over ``PLAY_S`` seconds — measured
between changes, so the 5 s frames do not round it; ≥ the chosen speed means the page
keeps up.  ``frames_skipped_{speed}`` counts frames the display jumped over (at 20× a
frame lasts 250 ms, one play interval).
"""

from __future__ import annotations

import logging
import tempfile
from datetime import datetime
from pathlib import Path

from dashboard.benchmarks.live import CHROME_FLAGS, CHROMIUM, served_in_thread
from twin.bench import benchmark

log = logging.getLogger(__name__)
INCIDENT = "colossus-cdu-pump-failure"
START = "2024-07-22T15:00:00Z"
PLAY_S = 12.0
FRAME_S = 5.0

_OBSERVE_JS = """
() => {
    window.ctInstants = [];
    const node = document.querySelector('#replay-instant');
    new MutationObserver(() => window.ctInstants.push([performance.now(), node.textContent]))
        .observe(node, {childList: true, characterData: true, subtree: true});
}
"""


def _seconds(text: str) -> float:
    return datetime.strptime(text.replace(" UTC", ""), "%Y-%m-%d %H:%M:%S").timestamp()


def follow_figures(base_url: str, speeds: tuple[int, ...] = (20, 100)) -> dict:
    """``shown_speed_x_<speed>`` and ``frames_skipped_<speed>`` for each play speed (see module docstring)."""
    from playwright.sync_api import sync_playwright

    out = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROME_FLAGS)
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        for speed in speeds:
            page.goto(f"{base_url}/replay?view=replay:{INCIDENT}@{START}")
            page.wait_for_selector("#replay-instant")
            page.click(f"#replay-speed >> text={speed}×")
            page.evaluate(_OBSERVE_JS)
            page.click("#replay-play")
            page.wait_for_timeout(PLAY_S * 1000)
            page.click("#replay-play")
            seen = [(t, _seconds(text)) for t, text in page.evaluate("window.ctInstants")]
            seen = [s for i, s in enumerate(seen) if i == 0 or s[1] != seen[i - 1][1]]
            if len(seen) < 3:
                out[f"shown_speed_x_{speed}"] = 0.0
                continue
            (t0, s0), (t1, s1) = seen[0], seen[-1]
            out[f"shown_speed_x_{speed}"] = round((s1 - s0) / ((t1 - t0) / 1000.0), 2)
            out[f"frames_skipped_{speed}"] = int(round((s1 - s0) / FRAME_S)) - (len(seen) - 1)
            out[f"replayed_s_{speed}"] = s1 - s0
        browser.close()
    return out


@benchmark("replay_follow")
def replay_follow_benchmark() -> dict:
    """The browser playing a colossus incident at 20× and 100× (see module docstring)."""
    from dashboard.app import app_for_hub
    from ingest.live.runtime import build_hub

    if not Path(CHROMIUM).exists():
        log.warning("no Chromium at %s: replay follow speed not measured", CHROMIUM)
        return {}
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="clustertwin-bench-") as tmp:
        hub = build_hub("demo", f"sqlite:///{Path(tmp) / 'replay.db'}", record=False)
        hub.step()
        app = app_for_hub(hub, tick_ms=60_000)
        try:
            with served_in_thread(app) as base:
                results = {"incident": INCIDENT, "play_s": PLAY_S}
                results.update(follow_figures(base))
        finally:
            hub.db.dispose()
    results["ratio_shown_vs_chosen_20"] = round(results.get("shown_speed_x_20", 0.0) / 20.0, 3)
    return results
