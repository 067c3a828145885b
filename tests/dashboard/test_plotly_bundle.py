"""The vendored plotly.js bundle in assets/: right version, every trace type the app draws, used by the page."""

from __future__ import annotations

import re
from pathlib import Path

import plotly.offline
import pytest
from playwright.sync_api import expect

REPO_DIR = Path(__file__).resolve().parents[2]
BUNDLES = sorted((REPO_DIR / "assets").glob("plotly-*.min.js"))
MAX_BUNDLE_BYTES = 3_000_000
SHAPE_TYPES = {"line", "rect", "circle", "path"}  # layout shapes, not traces
INPUT_TYPES = {"search", "text", "number", "hidden", "password", "submit"}  # input and button types, not traces
AXIS_TYPES = {"linear", "log", "date", "category", "multicategory"}  # axis types (xaxis=dict(type=...)), not traces
COLUMN_TYPES = {"numeric", "text", "datetime", "any"}  # DataTable column types, not traces


def _bundle() -> Path:
    assert len(BUNDLES) == 1, f"expected one vendored plotly bundle in assets/, found {[b.name for b in BUNDLES]}"
    return BUNDLES[0]


def _header(path: Path) -> str:
    with path.open(encoding="utf-8") as f:
        return f.read(4000).split("*/", 1)[0]


def bundled_trace_types(path: Path) -> set[str]:
    """Trace types the build recipe in the bundle's header registers (core brings scatter)."""
    modules = set(re.findall(r"require\('plotly\.js/lib/(\w+)'\)", _header(path)))
    assert "core" in modules, "the recipe must start from plotly.js/lib/core"
    return (modules - {"core"}) | {"scatter"}


def app_trace_types() -> set[str]:
    """Trace types written in the dashboard's source (``type="..."`` and ``go.<Trace>(``)."""
    types: set[str] = set()
    for path in (REPO_DIR / "dashboard").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        types |= set(re.findall(r"""\btype\s*=\s*["'](\w+)["']""", text))
        types |= set(re.findall(r"""["']type["']\s*:\s*["'](\w+)["']""", text))
        types |= {name.lower() for name in re.findall(r"\bgo\.(\w+)\(", text)} - {"figure"}
    return types - SHAPE_TYPES - INPUT_TYPES - AXIS_TYPES - COLUMN_TYPES


def test_bundle_matches_plotly_py_version_and_size():
    path = _bundle()
    version = plotly.offline.get_plotlyjs_version()
    assert path.name == f"plotly-{version}-clustertwin.min.js"
    assert _header(path).lstrip("/* \n").startswith(f"plotly.js {version},")
    assert path.stat().st_size < MAX_BUNDLE_BYTES


def test_bundle_has_every_trace_type_the_app_draws():
    used = app_trace_types()
    assert {"scatter", "scattergl", "bar", "heatmap", "sankey"} <= used  # the scan finds them
    missing = used - bundled_trace_types(_bundle())
    assert not missing, f"trace types not in the vendored plotly.js bundle (rebuild it, see its header): {missing}"


@pytest.mark.browser
def test_graphs_use_the_vendored_bundle(served_app, new_page):
    page, log = new_page("1366x768")
    requests: list[str] = []
    page.on("request", lambda req: requests.append(req.url))
    page.goto(served_app.url("/"))
    expect(page.locator(".js-plotly-plot .main-svg").first).to_be_attached()
    assert page.evaluate("window.Plotly.version") == plotly.offline.get_plotlyjs_version()
    assert any(_bundle().name in url for url in requests)
    assert not any("package_data/plotly.min.js" in url for url in requests), "Dash's full plotly.min.js was fetched"
    assert log.errors == []
    assert log.external == []
