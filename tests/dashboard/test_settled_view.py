"""Both scenario views (a scenario file, an editor scenario) read their settled result the same way."""

from __future__ import annotations

import pytest

from dashboard.views.scenario_files import scenario_view
from dashboard.views.settled import SettledView
from dashboard.whatif.outcome import outcome
from dashboard.whatif.view import EditorScenarioView
from twin.engine.view import View


@pytest.fixture(scope="module", params=["file", "editor"])
def settled(request, demo_state):
    if request.param == "file":
        return scenario_view(demo_state, "demo-cdu-loss")
    return EditorScenarioView("plain", outcome(demo_state, []))


def test_a_settled_view_is_a_read_only_view_of_one_snapshot(settled, demo_state):
    assert isinstance(settled, SettledView) and isinstance(settled, View) and not settled.is_live
    assert settled.key.startswith("scenario:") and settled.label == f"scenario · {settled.title}"
    assert settled.latest() is settled.latest_tick().snapshot is not None
    assert settled.site_name == demo_state.name and settled.source_ages() == {}
    trend = settled.trend(0.0)  # the settled tick's row is inside any window
    assert len(trend) == 1 and trend.index[-1] == settled.latest().ts
    assert settled.alerts() == settled.alerts() and settled.alerts() is not settled.alerts()  # copies
    assert settled.placed_jobs() == settled.placed_jobs() and settled.job_timeline("any job") == []


def test_histories_are_empty_and_ids_outside_the_site_are_refused(settled, demo_state):
    assert settled.rack_history(0).empty and settled.cdu_history(0).empty
    with pytest.raises(ValueError, match="rack id"):
        settled.rack_history(demo_state.n_racks)
    with pytest.raises(ValueError, match="CDU id"):
        settled.cdu_history(-1)


def test_the_editor_view_has_no_alerts_and_names_its_edits(demo_state):
    view = EditorScenarioView("plain", outcome(demo_state, []))
    assert view.alerts() == [] and view.title == "plain"
    assert view.description == "what-if scenario plain (0 racks edited)"
