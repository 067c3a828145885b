"""Every form of the what-if editor, through the browser's own path, with the effect the twin projects.

The path is the one the page's ``apply_edit`` callback takes: the page's ``build_edit`` turns a
button and its form values into an edit, :func:`dashboard.whatif.edits.resolve_edits` checks it
against the edit schema and the site (inside :func:`dashboard.whatif.outcome.outcome`, which
then projects it), and the answer is compared with the answer before the edit.  The forms are
enumerated from the page's own lists (its apply buttons, fail kinds, cap scopes, setpoint
targets), so a form added without a case here fails :func:`test_every_form_of_the_page_has_a_case`.

The site is the demo site with a second, empty facility loop ``FW-H1B`` on the same plant,
so that moving a rack's in-rack CDU to another loop has somewhere to go.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pytest

from dashboard import ids
from dashboard.whatif.outcome import outcome
from tests.conftest import REPO_DIR
from tests.dashboard.standin_hub import StandinView
from twin.scenario.projection import run_scenario
from twin.site.edits import SETPOINT_FIELD
from twin.site.load import load_site

W = ids.WhatIf
CDU = "H1-R01-K01-CDU"  # the in-rack CDU of rack H1-R01-K01
NO_JOB = {"op": "set_job", "job": ""}  # the demo job takes every GPU: a site with fewer runs none
HOT = {"op": "set_weather", "outdoor_dry_bulb_c": 40.0, "outdoor_wet_bulb_c": 30.0}  # chillers carry the load


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    text = (REPO_DIR / "data" / "sites" / "demo.toml").read_text()
    loop = '  { name = "FW-H1", plant = "PLANT-1", capacity_kw = 1400.0, flow_lpm = 2000.0 },\n'
    assert loop in text
    text = text.replace(
        loop, loop + '  { name = "FW-H1B", plant = "PLANT-1", capacity_kw = 700.0, flow_lpm = 1000.0 },\n'
    )
    path = tmp_path_factory.mktemp("forms") / "demo-two-loops.toml"
    path.write_text(text)
    return load_site(path)


@pytest.fixture(scope="module")
def page(dash_app):
    import importlib

    return importlib.import_module("dashboard.pages.whatif")


@dataclass
class Answer:
    """The twin's answer to an edit list, as the page gets it, and the snapshot it is made of."""

    base: object
    edits: list[dict]

    @cached_property
    def result(self):
        return outcome(self.base, self.edits)

    @cached_property
    def snap(self):
        return run_scenario(self.result.state, self.result.scenario)[0]

    @property
    def state(self):
        return self.result.state

    def figure(self, path: str):
        """A figure of the answer's scenario report by dotted path (``gpus.n_gpus``)."""
        value = self.result.answer.as_dict()["scenario"]
        for key in path.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        return value

    def racks_changed(self) -> dict[str, dict]:
        return {r["rack"]: r for r in self.result.answer.as_dict()["diff"]["racks"]}

    # per-element readings of the settled twin
    def cdu_flow(self, name: str) -> float:
        return float(self.snap.coolant_flow_lpm[self.state.cdu_name.index(name)])

    def pumps_running(self, name: str) -> int:
        return int(self.snap.pumps_running_count[self.state.cdu_name.index(name)])

    def cdu_supply(self, name: str) -> float:
        return float(self.snap.coolant_supply_temp_c[self.state.cdu_name.index(name)])

    def cdu_heat(self, name: str) -> float:
        return float(self.snap.cdu_heat_kw[self.state.cdu_name.index(name)])

    def loop_flow(self, name: str) -> float:
        loop = self.state.loop_name.index(name)
        return float(self.snap.coolant_flow_lpm[self.state.cdu_loop == loop].sum())

    def loop_supply(self, name: str) -> float:
        return float(self.snap.loop_supply_temp_c[self.state.loop_name.index(name)])

    def loop_heat(self, name: str) -> float:
        return float(self.snap.loop_heat_kw[self.state.loop_name.index(name)])

    def load(self, name: str) -> float:
        return float(self.snap.load_frac[self.state.power_name.index(name)])

    def rack_power(self, name: str) -> float:
        return float(self.snap.rack_power_kw[self.state.rack_name.index(name)])


@dataclass
class Form:
    """A form filled in: the racks selected, the form's values, the edits stored before, and what the edit does.

    ``effect(before, after)`` asserts the change from the answer before the edit to the answer with it.
    """

    form: dict
    effect: object
    selected: list[str] = field(default_factory=list)
    prior: list[dict] = field(default_factory=list)


# fail kind → (element, reading of it, +1 rises / -1 falls when it fails, edits that make the failure show)
FAILS = {
    "pump": (CDU, lambda a: a.pumps_running(CDU), -1, []),
    "cdu": (CDU, lambda a: a.cdu_flow(CDU), -1, []),
    "loop": ("FW-H1", lambda a: a.loop_flow("FW-H1"), -1, []),
    "chiller": ("PLANT-1", lambda a: a.loop_supply("FW-H1"), +1, [HOT]),
    "busway": ("H1-BW-R01-A", lambda a: a.load("H1-BW-R01-B"), +1, []),
    "switchgear": ("H1-SWGR-A", lambda a: a.load("H1-SWGR-B"), +1, []),
    "transformer": ("H1-TX1-A", lambda a: a.load("H1-TX1-B"), +1, []),
    "ups": ("H1-UPS1-A", lambda a: a.load("H1-UPS1-B"), +1, []),
    "generator": ("GEN-01", lambda a: a.figure("generation_capacity_mw"), -1, []),
    "battery": ("BESS", lambda a: a.figure("generation_capacity_mw"), -1, []),
    "grid": ("GRID", lambda a: a.figure("generation_capacity_mw"), -1, []),
    "switch": ("leaf-p00-a000-r0", lambda a: a.figure("fabric.n_links_down"), +1, []),
    "node": ("h1-r01-k01-n0", lambda a: a.figure("gpus.n_gpus_off"), +1, []),
}


def _failed(kind: str):
    element, reading, sign, _prior = FAILS[kind]

    def effect(before: Answer, after: Answer) -> None:
        assert sign * (reading(after) - reading(before)) > 1e-3 * max(abs(reading(before)), 1.0), (
            f"fail {kind} {element}: {reading(before)} → {reading(after)}"
        )
        if kind == "pump":  # one pump of two: the other carries the flow, and the CDU has no spare left
            assert after.cdu_flow(CDU) == pytest.approx(before.cdu_flow(CDU))
            assert after.pumps_running("H1-R01-K02-CDU") == before.pumps_running("H1-R01-K02-CDU")
            assert (
                before.figure("time_to_throttle_s.pump_loss_throttle_s.min_s") is None
            )  # N+1: a pump loss is ridden out
            assert after.figure("time_to_throttle_s.pump_loss_throttle_s.min_s") > 0  # now the next one throttles
        if kind == "cdu":
            assert after.cdu_flow(CDU) == 0.0

    return effect


def _restored(kind: str):
    _element, reading, _sign, _prior = FAILS[kind]

    def effect(before: Answer, after: Answer) -> None:
        untouched = Answer(before.base, [e for e in before.edits if e["op"] != "fail"])
        assert reading(before) != pytest.approx(reading(untouched))  # the failure showed ...
        assert reading(after) == pytest.approx(reading(untouched), rel=1e-6, abs=1e-6)  # ... and is undone

    return effect


def _form_fail(kind: str) -> Form:
    element, _reading, _sign, prior = FAILS[kind]
    return Form({"fail_kind": kind, "fail_element": element}, _failed(kind), prior=list(prior))


def _form_restore(kind: str) -> Form:
    element, _reading, _sign, prior = FAILS[kind]
    fail = {"op": "fail", "elements": [element]}
    fail |= {"pumps_count": 1} if kind == "pump" else {"chillers_count": 1} if kind == "chiller" else {}
    return Form({"fail_kind": kind, "fail_element": element}, _restored(kind), prior=[*prior, fail])


def _converted(before: Answer, after: Answer) -> None:
    assert after.figure("gpus.n_gpus") == before.figure("gpus.n_gpus") + 8 * (72 - 64)  # a row of 8 NVL72 racks
    assert {after.state.rack_type[after.state.rack_name.index(n)] for n in ROW} == {"GB200-NVL72"}


def _moved(before: Answer, after: Answer) -> None:
    i = after.state.rack_name.index("H1-R01-K01")
    assert (after.state.rack_x_m[i], after.state.rack_y_m[i]) == (5.8, 1.0)
    assert "moved" in after.racks_changed()["H1-R01-K01"]["layout"]


def _removed(before: Answer, after: Answer) -> None:
    assert "H1-R02-K08" not in after.state.rack_name
    assert after.figure("gpus.n_gpus") == before.figure("gpus.n_gpus") - 64


def _refed(before: Answer, after: Answer) -> None:
    assert after.load("H1-BW-R02-A") > before.load("H1-BW-R02-A") + 0.01
    assert after.load("H1-BW-R01-A") < before.load("H1-BW-R01-A") - 0.01


def _to_in_row_cdu(before: Answer, after: Answer) -> None:
    rack = after.state.rack_name.index("H1-R02-K01")
    assert after.state.cdu_name[after.state.rack_cdu[rack]] == "H1-R01-CDU1"
    assert after.cdu_heat("H1-R01-CDU1") > before.cdu_heat("H1-R01-CDU1") + 1.0  # it now cools two racks


def _to_other_loop(before: Answer, after: Answer) -> None:
    assert after.loop_heat("FW-H1B") > before.loop_heat("FW-H1B") + 20.0  # a 60 kW rack's heat moves over
    assert after.loop_heat("FW-H1") < before.loop_heat("FW-H1") - 20.0


def _capped_racks(before: Answer, after: Answer) -> None:
    assert after.rack_power("H1-R01-K01") < before.rack_power("H1-R01-K01") - 5.0
    assert after.rack_power("H1-R02-K01") == pytest.approx(before.rack_power("H1-R02-K01"), rel=0.02)


def _capped_all(before: Answer, after: Answer) -> None:
    assert after.figure("it_power_mw") < before.figure("it_power_mw") - 0.05
    assert float(after.snap.gpu_power_w.max()) <= 400.0 + 1e-6


def _cdu_setpoint(before: Answer, after: Answer) -> None:
    assert before.cdu_supply(CDU) < 35.0 and after.cdu_supply(CDU) == pytest.approx(40.0, abs=0.1)
    assert after.cdu_supply("H1-R01-K02-CDU") == pytest.approx(before.cdu_supply("H1-R01-K02-CDU"), abs=0.01)
    hotter = after.racks_changed()["H1-R01-K01"]["rack_max_gpu_temp_delta_k"]
    assert hotter > 5.0 and "H1-R01-K02" not in after.racks_changed()  # only its rack warms
    assert after.figure("hottest_gpu_temp_c") > before.figure("hottest_gpu_temp_c") + 5.0


def _loop_supply(before: Answer, after: Answer) -> None:
    assert before.loop_supply("FW-H1") < 30.0 and after.loop_supply("FW-H1") == pytest.approx(33.0, abs=0.1)
    assert after.figure("hottest_gpu_temp_c") > before.figure("hottest_gpu_temp_c") + 3.0


def _plant_setpoint(before: Answer, after: Answer) -> None:
    assert list(after.state.plant_supply_setpoint_c) == [31.0]  # a change of the site model
    assert after.loop_supply("FW-H1") > before.loop_supply("FW-H1") + 3.0


def _hot_weather(before: Answer, after: Answer) -> None:
    assert after.figure("cooling_power_mw") > before.figure("cooling_power_mw") * 1.5


def _no_job(before: Answer, after: Answer) -> None:
    assert before.figure("job.tokens_per_s") > 0 and after.figure("job") is None


ROW = [f"H1-R01-K0{k}" for k in range(1, 9)]
FORMS: dict[tuple[str, str | None], Form] = {
    (W.APPLY_TYPE, None): Form({"type": "GB200-NVL72"}, _converted, ROW),
    (W.APPLY_MOVE, None): Form({"x": 5.8, "y": 1.0}, _moved, ["H1-R01-K01"]),
    (W.APPLY_REMOVE, None): Form({}, _removed, ["H1-R02-K08"], [NO_JOB]),
    (W.APPLY_FEEDS, None): Form({"feed_a": "H1-BW-R02-A", "feed_b": "H1-BW-R02-B"}, _refed, ["H1-R01-K01"]),
    (W.APPLY_CDU, "cdu"): Form(
        {"cdu": "H1-R01-CDU1"},
        _to_in_row_cdu,
        ["H1-R02-K01"],
        [NO_JOB, {"op": "set_rack_type", "racks": ["H1-R01-K01", "H1-R02-K01"], "type": "hgx-a100-inrow"}],
    ),
    (W.APPLY_CDU, "loop"): Form({"loop": "FW-H1B"}, _to_other_loop, ["H1-R01-K01"]),
    (W.APPLY_CAP, "racks"): Form({"cap_scope": "racks", "cap_w": 300}, _capped_racks, ["H1-R01-K01"]),
    (W.APPLY_CAP, "site"): Form({"cap_scope": "site", "cap_w": 400}, _capped_all),
    (W.APPLY_CAP, "job"): Form({"cap_scope": "job", "cap_w": 400}, _capped_all),  # the demo job runs on every GPU
    (W.APPLY_SETPOINT, "cdus"): Form(
        {"setpoint_target": "cdus", "setpoint_element": CDU, "setpoint_c": 40}, _cdu_setpoint
    ),
    (W.APPLY_SETPOINT, "loops"): Form(
        {"setpoint_target": "loops", "setpoint_element": "FW-H1", "setpoint_c": 33}, _loop_supply
    ),
    (W.APPLY_SETPOINT, "plants"): Form(
        {"setpoint_target": "plants", "setpoint_element": "PLANT-1", "setpoint_c": 31}, _plant_setpoint
    ),
    (W.APPLY_WEATHER, None): Form({"dry": 40, "wet": 30}, _hot_weather),
    (W.APPLY_JOB, None): Form({"job": ""}, _no_job),
    **{(W.APPLY_FAIL, kind): _form_fail(kind) for kind in FAILS},
    **{(W.APPLY_RESTORE, kind): _form_restore(kind) for kind in FAILS},
}


def page_forms(page) -> set[tuple[str, str | None]]:
    """(button, choice) of every form the page offers: its buttons, and the choices that change the edit made."""
    choices = {
        W.APPLY_CDU: ("cdu", "loop"),  # an in-row CDU or a facility loop
        W.APPLY_CAP: page.CAP_SCOPES,
        W.APPLY_FAIL: page.FAIL_KINDS,
        W.APPLY_RESTORE: page.FAIL_KINDS,
        W.APPLY_SETPOINT: page.SETPOINT_TARGETS,
    }
    return {(button, choice) for button in page.APPLY_BUTTONS for choice in choices.get(button, (None,))}


def test_every_form_of_the_page_has_a_case(page):
    assert set(FORMS) == page_forms(page)
    assert set(page.SETPOINT_TARGETS) == set(SETPOINT_FIELD)  # each target the form offers has its value field
    known = {key for key, _control in page.FORM_FIELDS}
    assert {key for f in FORMS.values() for key in f.form} <= known


@pytest.mark.parametrize("button, choice", sorted(FORMS, key=lambda k: (k[0], k[1] or "")))
def test_each_form_projects_its_effect(page, site, view_request, button, choice):
    case = FORMS[(button, choice)]
    with view_request(StandinView(site, live=True)):
        edit = page.build_edit(button, case.selected, dict(case.form))
    before, after = Answer(site, list(case.prior)), Answer(site, [*case.prior, edit])
    assert after.result.scenario is not None  # resolve_edits accepted the edit the form made
    case.effect(before, after)


def test_the_cdu_setpoint_form_sends_the_cdu_setpoint_field(page, site, view_request):
    """The drift this test file guards against: a CDU's setpoint is supply_setpoint_c, a loop's supply supply_temp_c."""
    with view_request(StandinView(site, live=True)):
        cdu = page.build_edit(
            W.APPLY_SETPOINT, [], {"setpoint_target": "cdus", "setpoint_element": CDU, "setpoint_c": 40}
        )
        loop = page.build_edit(
            W.APPLY_SETPOINT, [], {"setpoint_target": "loops", "setpoint_element": "FW-H1", "setpoint_c": 33}
        )
    assert cdu == {"op": "set_setpoint", "cdus": [CDU], "supply_setpoint_c": 40}
    assert loop == {"op": "set_setpoint", "loops": ["FW-H1"], "supply_temp_c": 33}
    assert np.isfinite(Answer(site, [cdu]).result.scenario.inputs.cdu_supply_setpoint_c).sum() == 1
