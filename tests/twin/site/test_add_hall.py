"""A hall added like one the site has: rows, loop and power chain copied and renamed, shared parts kept shared."""

from __future__ import annotations

import pytest

from twin.site import design
from twin.site.add_hall import HALL_GAP_M, AddHallError, add_hall_like, next_hall_name
from twin.site.catalogue import load_catalogue
from twin.site.load import build_site_model, load_site


@pytest.fixture(scope="module")
def colossus():
    return load_site("colossus")


def test_a_copy_of_h4_is_h5_with_its_own_chain_under_the_same_mv_buses(colossus):
    model, name = add_hall_like(colossus.site_model, "H4")
    assert name == "H5" and [h.name for h in model.halls] == ["H1", "H2", "H3", "H4", "H5"]
    h4, h5 = model.halls[3], model.halls[4]
    assert h5.loop == "FW-H5" and [r.name for r in h5.rows] == [r.name for r in h4.rows]
    assert [r.feed_a for r in h5.rows][:2] == ["H5-BW-R01-A", "H5-BW-R02-A"]
    furthest = max(r.y_m for h in colossus.site_model.halls for r in h.rows)
    assert min(r.y_m for r in h5.rows) == pytest.approx(furthest + HALL_GAP_M)
    power = model.power
    switchgear = {e.name: e.parent for e in power.switchgear}
    assert switchgear["H5-SWGR-A"] == "MV-A" and switchgear["H5-SWGR-B"] == "MV-B"  # shared MV buses
    assert "MV-A" in switchgear and "H5-MV-A" not in switchgear
    before = colossus.site_model.power
    for kind in ("switchgear", "transformers", "ups", "busways"):  # H4's chain once more, nothing else
        h4_count = sum(e.name.startswith("H4-") for e in getattr(before, kind))
        assert len(getattr(power, kind)) == len(getattr(before, kind)) + h4_count, kind
    transformers = {e.name: e.parent for e in power.transformers}
    assert transformers["H5-TX1-A"] == "H5-SWGR-A"
    loops = {lp.name: lp for lp in model.cooling.loops}
    assert loops["FW-H5"].plant == "PLANT-1" and loops["FW-H5"].capacity_kw == loops["FW-H4"].capacity_kw
    assert model.power.sources == before.sources  # the same generation
    # the original model is left as it was
    assert [h.name for h in colossus.site_model.halls] == ["H1", "H2", "H3", "H4"]


def test_the_new_site_builds_with_a_fifth_of_more_racks(colossus):
    model, _ = add_hall_like(colossus.site_model, "H4")
    state = build_site_model(model, colossus.source_file, load_catalogue(), design.WARN)
    assert state.n_racks == colossus.n_racks + 392 and state.n_gpus == colossus.n_gpus + 392 * 64
    assert list(state.hall_name) == ["H1", "H2", "H3", "H4", "H5"]
    assert state.rack_name[-1] == "H5-R25-K08"


def test_names_and_refusals(colossus):
    assert next_hall_name(colossus.site_model) == "H5"
    with pytest.raises(AddHallError, match=r"no hall 'H9' to copy \(halls: H1, H2, H3, H4\)"):
        add_hall_like(colossus.site_model, "H9")
    with pytest.raises(AddHallError, match="a hall 'H2' exists already"):
        add_hall_like(colossus.site_model, "H4", "H2")


def test_a_hall_past_the_site_files_limit_is_refused_in_one_line():
    from twin.site import limits

    model = load_site("demo").site_model
    for _ in range(limits.MAX_HALLS - len(model.halls)):
        model, _name = add_hall_like(model, "H1")
    with pytest.raises(AddHallError, match=r"^the site with hall H101 is not a valid site file: halls: ") as err:
        add_hall_like(model, "H1")
    assert "\n" not in str(err.value)
