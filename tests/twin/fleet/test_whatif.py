"""The whole-site fleet what-if: demo's row H1-R01 as GB200 NVL72 against the site as built, by hand."""

from __future__ import annotations

import pytest

from tests.twin.fleet.tiny_fleet import job
from twin.fleet.edit_whatif import FleetEdit, fleet_edit_whatif
from twin.fleet.policy import Policy
from twin.fleet.simulate import SimOptions
from twin.fleet.whatif import Conversion, WhatIfError, convert_site, gpus_by_type
from twin.site.load import load_site

HORIZON_S = 3000.0
ROW_AS_GB200 = Conversion("GB200-NVL72", rows=("H1-R01",))


def _whatif(demo, conv, jobs, policy, retarget_kinds=()):
    """The what-if of converting row H1-R01 (``conv``, built once) over ``HORIZON_S``, without failures."""
    edit = FleetEdit(conversion=ROW_AS_GB200, retarget_kinds=retarget_kinds)
    opts = SimOptions(horizon_s=HORIZON_S, failures=False)
    return fleet_edit_whatif(demo, jobs, policy, opts, edit, converted=conv, horizon_range_s=(0.0, HORIZON_S))


@pytest.fixture(scope="module")
def sites():
    demo = load_site("demo")
    return demo, convert_site(demo, ROW_AS_GB200)


def test_the_conversion_retypes_one_row(sites):
    demo, conv = sites
    assert gpus_by_type(demo) == {"H100-SXM5-80GB": 1024}
    # 8 racks of 8 nodes × 8 H100 stay; 8 racks become 18 trays × 4 GB200 = 576
    assert gpus_by_type(conv) == {"B200-GB200-NVL72": 576, "H100-SXM5-80GB": 512}
    assert conv.design_findings  # the row's busways and CDUs were sized for H100 racks


def test_unknown_halls_and_rack_types_are_named(sites):
    demo, _ = sites
    with pytest.raises(WhatIfError, match="halls: 'H9' matches no hall"):
        convert_site(demo, Conversion("GB200-NVL72", halls=("H9",)))
    with pytest.raises(WhatIfError, match="type: unknown rack type 'NOPE'"):
        convert_site(demo, Conversion("NOPE", halls=("H1",)))
    with pytest.raises(WhatIfError, match="at least one hall"):
        convert_site(demo, Conversion("GB200-NVL72"))


def test_capacity_wait_and_tokens_by_hand(sites):
    """144 evaluation jobs of 4 GPUs at t = 0 and two 512-GPU gangs at t = 1 s, 1,000 s each; FCFS, EASY,
    flat, no power limit, no failures; the evaluations sent to the GB200 trays on the converted side.

    As built (128 nodes of 8 H100): the evaluations share 72 nodes from 0 to 1,000 s; the gangs need 64
    whole nodes each and only 56 are free, so both wait 999 s and run 1,000–2,000 s.  Mean wait
    2 × 999 / 146 = 13.6849 s; busy GPU·s 576 × 1,000 + 1,024 × 1,000 = 1.6e6 of 1,024 × 3,000:
    utilisation 0.520833.

    Converted (64 nodes of 8 H100, 144 trays of 4 GB200): the evaluations take the 144 trays at 0, the
    first gang the 64 H100 nodes at 1 s, the second waits for them until 1,001 s.  Mean wait
    1,000 / 146 = 6.84932 s; 1.6e6 busy GPU·s of 1,088 × 3,000: 0.490196.

    Tokens: each gang makes 1,000 tokens/s for 1,000 s on both sides: 2e6 over 3,000 s = 5.76e7 a day.
    """
    demo, conv = sites
    jobs = [job(f"e{i}", 4, 0.0, 1000.0, team="eval", kind="eval") for i in range(144)]
    jobs += [job(f"g{i}", 512, 1.0, 1000.0, team="pre", kind="finetune", tokens_per_s=1000.0) for i in range(2)]
    policy = Policy(ordering="fcfs", backfill="easy", placement="flat", power="off", bf_interval_s=0.0)
    out = _whatif(demo, conv, jobs, policy, ("eval",))
    b, c = out["baseline"], out["scenario"]
    assert b["mean_wait_s"] == pytest.approx(2 * 999.0 / 146)
    assert c["mean_wait_s"] == pytest.approx(1000.0 / 146)
    assert b["utilisation_frac"] == pytest.approx(1.6e6 / (1024 * HORIZON_S))
    assert c["utilisation_frac"] == pytest.approx(1.6e6 / (1088 * HORIZON_S))
    assert b["tokens_per_day"] == pytest.approx(5.76e7) and c["tokens_per_day"] == pytest.approx(5.76e7)
    assert b["jobs_completed_count"] == c["jobs_completed_count"] == 146
    assert out["diff"]["n_gpus"] == 64
    teams = {t["team"]: t for t in out["teams"]}
    assert teams["eval"]["baseline"]["mean_wait_s"] == 0.0 and teams["eval"]["scenario"]["mean_wait_s"] == 0.0
    assert teams["pre"]["baseline"]["mean_wait_s"] == pytest.approx(999.0)
    assert teams["pre"]["scenario"]["mean_wait_s"] == pytest.approx(500.0)
    assert teams["pre"]["scenario"]["tokens_per_day"] == pytest.approx(5.76e7)


def test_a_gang_larger_than_the_h100_nodes_left_never_runs(sites):
    """1,024 GPUs in whole 8-GPU nodes: the site as built holds it, the converted one (512 H100) never."""
    demo, conv = sites
    jobs = [job("big", 1024, 0.0, 1000.0, team="pre", kind="finetune")]
    policy = Policy(ordering="fcfs", backfill="easy", placement="flat", power="off", bf_interval_s=0.0)
    out = _whatif(demo, conv, jobs, policy)
    assert out["baseline"]["jobs_completed_count"] == 1
    assert out["scenario"]["jobs_completed_count"] == 0 and out["scenario"]["jobs_pending_count"] == 0
