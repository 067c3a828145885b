"""Tests of twin/physics/weather.py: psychrometrics and the Memphis daily curve."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from twin.physics import weather as w

MEMPHIS_LON = -90.0  # local solar time = UTC − 6 h


def test_stull_hand_point():
    assert float(w.wet_bulb_c(20.0, 0.5)) == pytest.approx(13.7, abs=0.05)  # Stull (2011)


def test_dew_point_round_trip():
    td = w.dew_point_c(30.0, 0.6)
    assert float(w.relative_humidity_frac(30.0, td)) == pytest.approx(0.6)
    assert float(w.dew_point_c(25.0, 1.0)) == pytest.approx(25.0)
    with pytest.raises(ValueError):
        w.dew_point_c(25.0, 0.0)


def test_memphis_curve_loads_with_derived_dew_points():
    curve = w.load_weather("memphis")
    assert curve.tmax_c.shape == (12,) and np.all(curve.tmax_c > curve.tmin_c)
    assert np.all(curve.dew_point_c <= curve.tmax_c)
    assert 20.0 < curve.dew_point_c[6] < 24.0  # humid July
    with pytest.raises(KeyError, match="no weather curve"):
        w.load_weather("atlantis")


def test_daily_curve_peaks_mid_afternoon_and_wet_bulb_below_dry_bulb():
    curve = w.load_weather("memphis")
    day = datetime(2024, 7, 16, 6, 0, tzinfo=UTC)  # 00:00 solar
    temps = [w.outdoor_conditions(curve, day + timedelta(hours=h), MEMPHIS_LON) for h in range(24)]
    dry = np.array([t[0] for t in temps])
    wet = np.array([t[1] for t in temps])
    assert int(np.argmax(dry)) == 15 and int(np.argmin(dry)) == 6
    assert dry.max() == pytest.approx(curve.tmax_c[6], abs=0.3)
    assert dry.min() == pytest.approx(curve.tmin_c[6], abs=0.3)
    assert np.all(wet <= dry) and 20.0 < wet.max() < 28.0
    jan = w.outdoor_conditions(curve, datetime(2024, 1, 15, 21, tzinfo=UTC), MEMPHIS_LON)
    assert jan[0] < dry.min()


def test_naive_timestamp_raises():
    with pytest.raises(ValueError, match="timezone"):
        w.outdoor_conditions(w.load_weather("memphis"), datetime(2024, 7, 1, 12), MEMPHIS_LON)
