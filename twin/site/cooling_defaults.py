"""Defaults of the cooling fields a site file may leave out: pipe sizes, loop and plant water volumes.

Used by the site loader and by the engine for tables built without it (tests).
"""

from __future__ import annotations

import numpy as np

# [E] one-way pipe run from the plant to a hall (plant beside the halls on one campus).
LOOP_PIPE_LENGTH_M = 150.0
# [E] design water velocity for sizing a loop's pipe when the site gives no diameter, inside the
# 1.2–3 m/s general-service range of [ASHRAE-HB-Fund-2017 Ch. 22].
PIPE_DESIGN_VELOCITY_M_PER_S = 2.5
# [S] chilled-water thermal storage sized for 7 minutes of ride-through [NVIDIA-CDU-Reqs] (DSX guide):
# the plant's water volume defaults to that many minutes of its design flow.
PLANT_STORAGE_S = 420.0
# [E] a chiller that lost power produces cooling again after 5 minutes (restart time is
# what sets the length of a cooling outage after a power dip [Schneider-WP179]).
CHILLER_RESTART_S = 300.0


def pipe_id_mm(flow_lpm: np.ndarray, velocity_m_per_s: float = PIPE_DESIGN_VELOCITY_M_PER_S) -> np.ndarray:
    """Inner diameter that carries ``flow_lpm`` at ``velocity_m_per_s`` [mm]: ``d = √(4 V̇ / (π v))``."""
    area_m2 = np.asarray(flow_lpm, dtype=np.float64) / 60_000.0 / velocity_m_per_s
    return np.sqrt(4.0 * area_m2 / np.pi) * 1e3


def loop_volume_l(pipe_length_m: np.ndarray, pipe_id_mm_: np.ndarray) -> np.ndarray:
    """Water in a loop's supply and return runs [L] (``2 L π d² / 4``)."""
    d_m = np.asarray(pipe_id_mm_, dtype=np.float64) / 1e3
    return 2.0 * np.asarray(pipe_length_m, dtype=np.float64) * np.pi * d_m * d_m / 4.0 * 1e3


def plant_volume_l(plant_flow_lpm: np.ndarray) -> np.ndarray:
    """Plant water (headers and storage) for ``PLANT_STORAGE_S`` of its flow [L]."""
    return np.asarray(plant_flow_lpm, dtype=np.float64) * PLANT_STORAGE_S / 60.0
