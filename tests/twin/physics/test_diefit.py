"""Fitting the die model to a trace (twin/physics/diefit.py): a known plant is recovered, bad input refused."""

from __future__ import annotations

import numpy as np
import pytest

from ingest.replay.diebench import SYNTHETIC, synthetic_trace
from twin.physics import diefit, thermal


def test_two_pole_fit_recovers_the_two_node_plant_behind_a_quantised_trace():
    """400 → 690 W step and idle cool-down, 0.3 s samples read to whole °C: fit on 40 %, score the rest."""
    t, p, y = synthetic_trace()
    res = diefit.fit_and_score(t, p, y, 0.4)
    assert res["fit_samples_count"] == 720 and res["heldout_samples_count"] == 1080
    two, one = res["two_pole"], res["one_pole"]
    assert two["heldout_cv_rmse_frac"] < 0.02 < one["heldout_cv_rmse_frac"]  # one lumped node cannot do it
    params = diefit.two_node_parameters(two["fit"])
    assert params.r_jp_c_per_w == pytest.approx(SYNTHETIC["r_jp"], rel=0.1)
    assert params.r_pc_c_per_w == pytest.approx(SYNTHETIC["r_pc"], rel=0.1)
    assert params.heat_capacity_j_per_k == pytest.approx(SYNTHETIC["c_j"] + SYNTHETIC["c_p"], rel=0.15)
    assert params.supply_c == pytest.approx(SYNTHETIC["supply"], abs=0.5)


def test_poles_and_gains_map_one_to_one_onto_the_two_node_model():
    """The partial fractions of the two-node transfer function give back C_j, C_p, R_jp, R_pc."""
    cj, cp, rjp, rpc = 45.0, 705.0, 0.0175, 0.021
    a11, a12, a21, a22 = -1 / (cj * rjp), 1 / (cj * rjp), 1 / (cp * rjp), -(1 / rjp + 1 / rpc) / cp
    lam = np.linalg.eigvals(np.array([[a11, a12], [a21, a22]]))
    t1, t2 = sorted(-1.0 / lam.real)
    # H(s) = (R + s rjp rpc cp) / (1 + s a1 + s² a2): residues at the poles give the gains
    r, b1 = rjp + rpc, rjp * rpc * cp
    g1 = (r * t1 - b1) / (t1 - t2)
    fit = diefit.PoleFit(30.0, (g1, r - g1), (t1, t2), (0.0, 0.0), 0.0)
    back = diefit.two_node_parameters(fit)
    assert (back.c_junction_j_per_k, back.c_plate_j_per_k) == pytest.approx((cj, cp))
    assert (back.r_jp_c_per_w, back.r_pc_c_per_w) == pytest.approx((rjp, rpc))
    # and the fit's own prediction of the step equals the engine's exact two-node step
    tt = np.arange(0.0, 200.0, 0.5)
    pp = np.where(tt < 120.0, 400.0, 690.0)
    tj, tp = thermal.two_node_steady_c(400.0, 30.0, rjp, rpc)
    steady = diefit.PoleFit(30.0, fit.gains_c_per_w, fit.taus_s, (0.0, 0.0), 0.0)
    pred = diefit.predict(steady, tt, pp)
    co = thermal.two_node_coefficients(cj, cp, rjp, rpc, 30.0, 0.5)
    ref = []
    for k in range(tt.size):
        ref.append(tj)
        tj, tp = co[0] * tj + co[1] * tp + co[4] * pp[k] + co[6], co[2] * tj + co[3] * tp + co[5] * pp[k] + co[7]
    # the lags start from 0 W: compare once the 400 W start has settled into both (after 100 s of it)
    assert pred[200:] == pytest.approx(np.array(ref[200:]), abs=0.02)


@pytest.mark.parametrize(
    "args, text",
    [
        ((np.arange(5.0), np.ones(5), np.ones(5)), "at least 12 samples"),
        ((np.arange(20.0), np.full(20, 300.0), np.full(20, 40.0)), "without any change of power"),
        ((np.arange(20.0)[::-1], np.arange(20.0), np.ones(20)), "must increase"),
        ((np.arange(20.0), np.r_[np.nan, np.arange(19.0)], np.ones(20)), "non-finite"),
    ],
)
def test_a_trace_that_cannot_be_fitted_is_one_clear_error(args, text):
    with pytest.raises(diefit.DieFitError, match=text):
        diefit.fit_two_pole(*args)
