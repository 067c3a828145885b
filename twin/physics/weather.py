"""Outdoor dry bulb and wet bulb at a site and instant, from monthly design values.

``data/weather.toml`` holds, per key, the mean daily maximum and minimum dry bulb of
each month and the mean relative humidity at 07:00 and 13:00.  The curve is

* annual: monthly values placed at mid-month and interpolated periodically by day of
  year;
* diurnal: two half-cosines in local solar time ``h = UTC hour + longitude/15``:
  rising from ``T_min`` at ``h_min`` (near sunrise) to ``T_max`` at ``h_peak``
  (mid-afternoon), falling back over the remaining hours — the usual two-piece
  sinusoid of daily temperature models (e.g. Reicosky et al. 1989, Agric. For.
  Meteorol. 46:193, model "WCALC"/cosine pieces);
* humidity: the dew point of each month is the mean of the dew points at 07:00 and
  13:00 (Magnus formula, Alduchov & Eskridge 1996, J. Appl. Meteor. 35:601) and is
  held constant through the day (dew point varies little diurnally [E]);
* wet bulb: Stull (2011), "Wet-bulb temperature from relative humidity and air
  temperature", J. Appl. Meteor. Climatol. 50:2267, valid for RH 5–99 % and
  −20…50 °C (±1 K).
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

import numpy as np

WEATHER_FILE = Path(__file__).resolve().parents[2] / "data" / "weather.toml"
# Magnus coefficients over water (Alduchov & Eskridge 1996).
MAGNUS_A = 17.625
MAGNUS_B_C = 243.04
# Mid-month day of year (non-leap), for the annual interpolation.
_MID_MONTH_DOY = np.array([15.5, 45.0, 74.5, 105.0, 135.5, 166.0, 196.5, 227.5, 258.0, 288.5, 319.0, 349.5])
_YEAR_DAYS = 365.0


@dataclass(frozen=True)
class WeatherCurve:
    """Monthly design values of one location (see module docstring)."""

    key: str
    description: str
    tmax_c: np.ndarray  # [12]
    tmin_c: np.ndarray  # [12]
    dew_point_c: np.ndarray  # [12], derived
    peak_hour_solar: float
    min_hour_solar: float


def dew_point_c(temp_c: np.ndarray | float, rh_frac: np.ndarray | float) -> np.ndarray:
    """Dew point [°C] from dry bulb [°C] and relative humidity (0–1], Magnus formula."""
    rh = np.asarray(rh_frac, dtype=np.float64)
    if np.any(~(rh > 0.0)) or np.any(rh > 1.0):
        raise ValueError("rh_frac: relative humidity must be in (0, 1]")
    gamma = np.log(rh) + MAGNUS_A * np.asarray(temp_c) / (MAGNUS_B_C + np.asarray(temp_c))
    return MAGNUS_B_C * gamma / (MAGNUS_A - gamma)


def relative_humidity_frac(temp_c: np.ndarray | float, dew_point: np.ndarray | float) -> np.ndarray:
    """Relative humidity (0–1] from dry bulb and dew point [°C] (Magnus); capped at 1."""
    t = np.asarray(temp_c, dtype=np.float64)
    td = np.asarray(dew_point, dtype=np.float64)
    rh = np.exp(MAGNUS_A * td / (MAGNUS_B_C + td) - MAGNUS_A * t / (MAGNUS_B_C + t))
    return np.minimum(rh, 1.0)


def wet_bulb_c(temp_c: np.ndarray | float, rh_frac: np.ndarray | float) -> np.ndarray:
    """Wet-bulb temperature [°C] from dry bulb [°C] and relative humidity (Stull 2011).

    Hand check (Stull's own example): 20 °C and 50 % RH give 13.7 °C.
    """
    t = np.asarray(temp_c, dtype=np.float64)
    rh = np.clip(np.asarray(rh_frac, dtype=np.float64) * 100.0, 5.0, 99.0)
    return (
        t * np.arctan(0.151977 * np.sqrt(rh + 8.313659))
        + np.arctan(t + rh)
        - np.arctan(rh - 1.676331)
        + 0.00391838 * rh**1.5 * np.arctan(0.023101 * rh)
        - 4.686035
    )


def _diurnal_temp_c(tmax: float, tmin: float, hour_solar: float, peak_hour: float, min_hour: float) -> float:
    mean, half = 0.5 * (tmax + tmin), 0.5 * (tmax - tmin)
    h = hour_solar % 24.0
    if min_hour <= h <= peak_hour:
        return mean - half * math.cos(math.pi * (h - min_hour) / (peak_hour - min_hour))
    since_peak = (h - peak_hour) % 24.0
    return mean + half * math.cos(math.pi * since_peak / (24.0 - (peak_hour - min_hour)))


@lru_cache(maxsize=8)
def load_weather(key: str = "memphis", path: str | None = None) -> WeatherCurve:
    """Read curve ``key`` from ``data/weather.toml`` (or ``path``); errors name the file and field."""
    file = Path(path) if path else WEATHER_FILE
    with file.open("rb") as fh:
        data = tomllib.load(fh)
    if key not in data:
        raise KeyError(f"{file.name}: no weather curve {key!r} (have: {', '.join(sorted(data))})")
    table = data[key]
    arrays = {}
    for name in ("tmax_c", "tmin_c", "rh_morning_frac", "rh_afternoon_frac"):
        values = np.asarray(table.get(name, []), dtype=np.float64)
        if values.shape != (12,):
            raise ValueError(f"{file.name}: {key}: {name}: need 12 monthly values, got {values.size}")
        arrays[name] = values
    if np.any(arrays["tmin_c"] > arrays["tmax_c"]):
        raise ValueError(f"{file.name}: {key}: tmin_c above tmax_c in some month")
    peak = float(table.get("peak_hour_solar", 15.0))
    low = float(table.get("min_hour_solar", 6.0))
    if not 0.0 <= low < peak < 24.0:
        raise ValueError(f"{file.name}: {key}: need 0 <= min_hour_solar < peak_hour_solar < 24")
    pairs = list(zip(arrays["tmax_c"], arrays["tmin_c"]))
    t_morning = np.array([_diurnal_temp_c(a, b, 7.0, peak, low) for a, b in pairs])
    t_afternoon = np.array([_diurnal_temp_c(a, b, 13.0, peak, low) for a, b in pairs])
    dew = 0.5 * (
        dew_point_c(t_morning, arrays["rh_morning_frac"]) + dew_point_c(t_afternoon, arrays["rh_afternoon_frac"])
    )
    return WeatherCurve(
        key=key,
        description=str(table.get("description", key)),
        tmax_c=arrays["tmax_c"],
        tmin_c=arrays["tmin_c"],
        dew_point_c=dew,
        peak_hour_solar=peak,
        min_hour_solar=low,
    )


def _annual_value(monthly: np.ndarray, day_of_year: float) -> float:
    xs = np.concatenate(([_MID_MONTH_DOY[-1] - _YEAR_DAYS], _MID_MONTH_DOY, [_MID_MONTH_DOY[0] + _YEAR_DAYS]))
    ys = np.concatenate(([monthly[-1]], monthly, [monthly[0]]))
    return float(np.interp(day_of_year % _YEAR_DAYS, xs, ys))


def outdoor_conditions(curve: WeatherCurve, ts: datetime, longitude_deg: float) -> tuple[float, float]:
    """Dry bulb and wet bulb [°C] at instant ``ts`` (timezone-aware) for a site at ``longitude_deg``.

    Local solar time is ``UTC + longitude/15`` hours (east positive).
    """
    if ts.tzinfo is None:
        raise ValueError("ts: must be timezone-aware (UTC)")
    utc = ts.astimezone(UTC)
    hours_utc = utc.hour + utc.minute / 60.0 + utc.second / 3600.0
    solar = hours_utc + longitude_deg / 15.0
    day = utc.timetuple().tm_yday - 1 + solar / 24.0  # day of year at local solar time
    tmax = _annual_value(curve.tmax_c, day)
    tmin = _annual_value(curve.tmin_c, day)
    dew = _annual_value(curve.dew_point_c, day)
    dry = _diurnal_temp_c(tmax, tmin, solar % 24.0, curve.peak_hour_solar, curve.min_hour_solar)
    dew = min(dew, dry)
    wet = float(wet_bulb_c(dry, relative_humidity_frac(dry, dew)))
    return dry, min(wet, dry)
