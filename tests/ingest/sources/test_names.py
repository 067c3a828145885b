"""Name tables: dcgm-exporter CSVs (current and 1.x) agree, BMC sensor names map as documented."""

from __future__ import annotations

import pytest

from ingest.sources.names import DCGM_FIELDS, VALID_RANGE, dcgm_blank_mask, match_sensor, normalise_unit
from twin.quantities import BY_NAME

CSV_DIR = "dcgm-exporter"
# The fields the twin reads from every exporter [DCGM-Fields] [DCGM-Exporter].
CORE = {
    "gpu_temp_c",
    "hbm_temp_c",
    "gpu_power_w",
    "gpu_energy_j",
    "gpu_util_frac",
    "sm_clock_mhz",
    "last_xid_code",
    "fb_used_mib",
}


def read_csv(path) -> list[tuple[str, str, str]]:
    """(field, prom type, help) rows, commented-out optional fields included."""
    rows = []
    for line in path.read_text().splitlines():
        text = line.lstrip("# ").strip()
        parts = [p.strip() for p in text.split(",", 2)]
        if len(parts) == 3 and parts[1] in ("gauge", "counter", "label") and parts[0].replace("_", "").isalnum():
            rows.append((parts[0], parts[1], parts[2]))
    return rows


def test_every_table_entry_is_a_canonical_quantity_with_a_range():
    for vendor, fm in DCGM_FIELDS.items():
        assert fm.canonical in BY_NAME, vendor
        assert fm.canonical in VALID_RANGE, vendor


@pytest.mark.parametrize("csv", ["default-counters.csv", "dcp-metrics-included.csv", "1.x-compatibility-metrics.csv"])
def test_core_fields_of_each_collector_csv_are_mapped(fixtures_dir, csv):
    rows = read_csv(fixtures_dir / CSV_DIR / csv)
    assert rows
    mapped = {DCGM_FIELDS[name].canonical for name, typ, _ in rows if name in DCGM_FIELDS}
    missing = CORE - mapped
    assert not missing, f"{csv}: {missing}"


def test_1x_names_map_like_their_current_names(fixtures_dir):
    current = {help_: name for name, _, help_ in read_csv(fixtures_dir / CSV_DIR / "default-counters.csv")}
    pairs = 0
    for old, _, help_ in read_csv(fixtures_dir / CSV_DIR / "1.x-compatibility-metrics.csv"):
        new = current.get(help_)
        if new is None:
            continue
        pairs += 1
        a, b = DCGM_FIELDS.get(old), DCGM_FIELDS.get(new)
        assert (a is None) == (b is None), (old, new)
        if a is not None:
            assert (a.canonical, a.scale) == (b.canonical, b.scale), (old, new)
    assert pairs >= 10


def test_energy_and_util_scales():
    assert DCGM_FIELDS["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"].scale == 1e-3
    assert DCGM_FIELDS["DCGM_FI_DEV_GPU_UTIL"].scale == 0.01
    assert (
        DCGM_FIELDS["DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"].canonical
        == DCGM_FIELDS["DCGM_FI_DEV_CLOCKS_EVENT_REASONS"].canonical
    )


def test_blank_sentinels():
    import numpy as np

    v = np.array(
        [
            9223372036854775792,
            9223372036854775794,
            2147483632,
            2147483635,
            140737488355328.0,
            140737488355330.0,
            2147483631,
            85,
            np.inf,
        ]
    )
    assert dcgm_blank_mask(v).tolist() == [True, True, True, True, True, True, False, False, False]
    assert dcgm_blank_mask(v, counter_field=True).tolist()[2:4] == [False, False]


@pytest.mark.parametrize(
    "name,kind,metric,index",
    [
        ("TEMP_GB_SXM1", "gpu", "gpu_temp_c", 0),
        ("TEMP_GB_SXM8_M", "gpu", "hbm_temp_c", 7),
        ("PWR_GB_SXM3", "gpu", "gpu_power_w", 2),
        ("HGX_GPU_SXM_5_DRAM_0_Temp_0", "gpu", "hbm_temp_c", 4),
        ("HGX_GPU_SXM_5_Energy_0", "gpu", "gpu_energy_j", 4),
        ("GPU0 Temp", "gpu", "gpu_temp_c", 0),
        ("PWR_PSU0", "psu", "psu_power_w", 0),
        ("PSU Power", "node", "node_power_w", -1),
        ("Inlet Temp", "node", "inlet_temp_c", -1),
        ("SPD_FAN_SYS3_F", "node", "fan_speed_rpm", 3),
    ],
)
def test_sensor_names(name, kind, metric, index):
    m = match_sensor(name)
    assert m is not None and (m.kind, m.canonical, m.index) == (kind, metric, index)


@pytest.mark.parametrize("name", ["TLIMIT_GB_SXM1", "HGX_GPU_SXM_1_TEMP_1", "PWR_GB_SXM1_M", "Planar 3.3V", "SEL"])
def test_headroom_and_untracked_sensors_map_to_nothing(name):
    assert match_sensor(name) is None


def test_units():
    assert normalise_unit("degrees C") == normalise_unit("Cel") == "C"
    assert normalise_unit("L/min") == "L/min" and normalise_unit("Watts") == "W" and normalise_unit(None) == ""
