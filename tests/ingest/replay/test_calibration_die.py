"""Calibration of the two-node die model on an nvidia-smi log of a power step, imported and replayed for real.

The log is synthetic (no real recording is in the repository, see data/die-traces/README.md): a
known two-node plant unlike the catalogue's H100 entry (lighter package, better conduction, a
28 °C coolant the site does not state) stepped 400 → 690 W and left to cool at idle, 0.5 s samples
read to whole °C.  ``replay --calibrate 0.4`` must recover the plant's split and heat capacity
from the first 40 % and predict the rest better than the uncalibrated site.
"""

from __future__ import annotations

import contextlib
import io
import json
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from ingest.replay.diebench import SYNTHETIC, synthetic_trace
from twin.cli import main

T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)


def _log(path, dt_s: float = 0.5) -> None:
    lines = ["timestamp, index, name, temperature.gpu, power.draw [W], utilization.gpu [%]"]
    traces = [synthetic_trace(dt_s, seed=g, plant={"supply": SYNTHETIC["supply"] + 0.3 * g}) for g in range(8)]
    for k, t in enumerate(traces[0][0]):
        stamp = (T0 + timedelta(seconds=float(t))).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
        for g, (_, p, y) in enumerate(traces):
            lines.append(
                f"{stamp}, {g}, NVIDIA H100 80GB HBM3, {int(y[k])}, {p[k]:.2f} W, {100 if p[k] > 100 else 0} %"
            )
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    root = tmp_path_factory.mktemp("die")
    logs = root / "logs"
    logs.mkdir()
    _log(logs / "h1-r01-k01-n0.csv")
    lib = str(root / "lib")
    argv = ["incidents", "--dir", lib, "import", "--format", "nvidia-smi-csv", str(logs), "--site", "demo"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main([*argv, "--name", "step", "--step", "0.5", "--json"]) == 0
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["replay", "step", "--dir", lib, "--calibrate", "0.4", "--json"]) == 0
    return json.loads(printed.getvalue())


@pytest.mark.slow
def test_calibration_recovers_the_plant_and_predicts_the_held_out_part_better(calibrated):
    out = calibrated["calibration"]
    params = out["parameters"]
    true_c = SYNTHETIC["c_j"] + SYNTHETIC["c_p"]
    assert params["heat_capacity_factor"] * 750.0 == pytest.approx(true_c, rel=0.15)
    assert params["junction_heat_frac"] == pytest.approx(SYNTHETIC["c_j"] / true_c, rel=0.25)
    before, after = out["heldout_before"]["gpu_temp_c"], out["heldout_after"]["gpu_temp_c"]
    assert after["cv_rmse"] < before["cv_rmse"] and after["cv_rmse"] < 3.0  # percent, held out
    assert abs(after["nmbe"]) < 1.5
    assert np.isfinite(params["r_th_conv_frac"]) and 0.0 < params["r_th_conv_frac"] < 1.0
