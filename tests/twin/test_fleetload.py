"""The fleet's occupancy carried onto an edited site: racks that stay keep their GPUs' load, new ones the mean."""

from __future__ import annotations

import numpy as np

from twin.scenario.fleetload import FleetLoad
from twin.scenario.load import parse_scenario
from twin.site.load import load_site


def test_an_edited_site_keeps_each_kept_racks_load_and_fills_converted_racks_with_the_mean():
    site = load_site("demo")
    util = np.linspace(0.0, 1.0, site.n_gpus)
    load = FleetLoad(site, util)
    assert load.on(site) is util
    convert = '[scenario]\nname = "x"\ndesign_limits = "warn"\n[[edits]]\nop = "set_rack_type"\n'
    convert += 'racks = ["H1-R01-K01"]\ntype = "GB200-NVL72"\n'
    edited = parse_scenario(convert, site, "x.toml").state
    on = load.on(edited)
    assert on.size == edited.n_gpus != site.n_gpus
    kept = edited.rack_name.index("H1-R01-K02")
    base_rack = site.rack_name.index("H1-R01-K02")
    np.testing.assert_allclose(np.sort(on[edited.gpu_rack == kept]), np.sort(util[site.gpu_rack == base_rack]))
    converted = edited.rack_name.index("H1-R01-K01")
    np.testing.assert_allclose(on[edited.gpu_rack == converted], util.mean())
    assert load.on(edited) is on  # computed once per edited site
    assert load.allocated_frac == (util > 0).mean()
