"""ipmitool text: every fixture layout, sensor-name mapping, and a live OpenIPMI ipmi_sim BMC."""

from __future__ import annotations

import math

import pytest
from servers.readiness import poll_until

from ingest.sources.ipmi import IpmiTarget, fetch_ipmi, ipmitool_command, parse_ipmi, parse_ipmitool
from ingest.sources.samples import IngestCounts

IPMI_DIR = "ipmitool"


def _fixture_texts(fixtures_dir):
    files = sorted((fixtures_dir / IPMI_DIR).glob("*.txt"))
    assert len(files) >= 3
    return [(p.name, p.read_text()) for p in files]


def test_every_fixture_parses_without_malformed_lines(fixtures_dir):
    for name, text in _fixture_texts(fixtures_dir):
        counts = IngestCounts()
        readings = parse_ipmitool(text, counts)
        assert counts.malformed_lines == 0, name
        assert len(readings) == counts.lines, name
        if "sdr_v" not in name:  # one reading per non-empty line
            assert len(readings) == sum(1 for line in text.splitlines() if line.strip()), name


def test_elist_states_units_and_psu_presence(fixtures_dir):
    text = (fixtures_dir / IPMI_DIR / "telegraf_sdr_elist_curated.txt").read_text()
    by_name = {r.name: r for r in parse_ipmitool(text)}
    assert by_name["SEL"].status == "ns" and math.isnan(by_name["SEL"].value) and by_name["SEL"].state == "No Reading"
    assert by_name["Inlet Temp"].value == 25 and by_name["Inlet Temp"].unit == "C"
    assert by_name["Inlet Temp"].sensor_number == 0x04 and by_name["Inlet Temp"].entity == "7.1"
    psu = by_name["Power Supply 1"]
    assert (psu.value, psu.unit, psu.state) == (110.0, "W", "Presence detected")
    assert by_name["USB Cable Pres"].unit == "discrete"
    assert by_name["Current 1"].value == pytest.approx(7.2)
    batch = parse_ipmi(text, "n1")
    rows = {(label, m): v for _, label, m, v, _ in batch.rows()}
    assert rows[("n1/Inlet Temp", "inlet_temp_c")] == 25
    assert rows[("n1/psu0", "psu_power_w")] == 110
    assert rows[("n1/Fan1", "fan_speed_rpm")] == 5040


def test_compact_sdr_discrete_and_not_readable(fixtures_dir):
    text = (fixtures_dir / IPMI_DIR / "telegraf_ibm_sdr_compact.txt").read_text()
    readings = parse_ipmitool(text)
    ns = [r for r in readings if r.status == "ns"]
    assert len(ns) == 2 and all(math.isnan(r.value) for r in ns)
    assert all(r.unit == "discrete" for r in readings if r.state.startswith("0x"))
    batch = parse_ipmi(text, "ibm")
    assert batch.select("node_power_w").value.tolist() == [210.0]  # "Avg Power"
    assert batch.select("inlet_temp_c").value.tolist() == [20.0]  # "Ambient Temp"
    assert batch.counts.unmapped_series == len(readings) - len(batch)


def test_verbose_records_thresholds_and_disabled(fixtures_dir):
    text = (fixtures_dir / IPMI_DIR / "ceilometer_intel_sdr_v.txt").read_text()
    by_name = {r.name: r for r in parse_ipmitool(text)}
    vr = by_name["BB P1 VR Temp"]
    assert (
        vr.value == 25
        and vr.sensor_number == 0x20
        and vr.thresholds == {"ucr": 115.0, "unc": 110.0, "lcr": 0.0, "lnc": 5.0}
    )
    assert by_name["BB +1.35 P1LV AB"].status == "ns" and math.isnan(by_name["BB +1.35 P1LV AB"].value)
    assert by_name["Pwr Consumption"].value == 154 and by_name["Pwr Consumption"].unit == "W"
    assert by_name["SSB Therm Trip"].unit == "discrete"


SENSOR_TEXT = """\
GPU0 Temp        | 41.000     | degrees C  | ok    | na        | na        | na        | 85.000    | 90.000    | 95.000
GPU1 Temp        | na         | degrees C  | na    | na        | na        | na        | 85.000    | 90.000    | 95.000
Drive Present    | 0x0        | discrete   | 0x0180| na        | na        | na        | na        | na        | na
TEMP_GB_SXM8     | 33.000     | degrees C  | ok    | na        | na        | na        | 85.000    | 88.000    | 90.000
TLIMIT_GB_SXM8   | 54.000     | degrees C  | ok    | na        | -3.000    | 0.000     | na        | na        | na
PWR_PSU2         | 312.000    | Watts      | ok    | na        | na        | na        | na        | na        | na
GPU2 Temp        | 12.5       | Volts      | ok    | na        | na        | na        | na        | na        | na
garbage line without pipes
"""


def test_sensor_layout_gpu_names_headroom_and_bad_lines():
    counts = IngestCounts()
    readings = parse_ipmitool(SENSOR_TEXT, counts)
    assert counts.malformed_lines == 1 and len(readings) == 7
    assert readings[0].thresholds == {"unc": 85.0, "ucr": 90.0, "unr": 95.0}
    batch = parse_ipmi(SENSOR_TEXT, "dgx")
    rows = {(label, m): v for _, label, m, v, _ in batch.rows()}
    assert rows[("dgx/gpu0", "gpu_temp_c")] == 41
    assert math.isnan(rows[("dgx/gpu1", "gpu_temp_c")])  # na → missing, not 0
    assert rows[("dgx/gpu7", "gpu_temp_c")] == 33  # TEMP_GB_SXM8 is 1-based
    assert rows[("dgx/psu2", "psu_power_w")] == 312  # DGX PSUs are 0-based
    assert not any(m == "gpu_temp_c" and v == 54 for (_, m), v in rows.items())  # T.Limit is headroom
    assert ("dgx/gpu2", "gpu_temp_c") not in rows  # volts on a temperature name: rejected
    assert batch.counts.unmapped_names["GPU2 Temp [V]"] == 1
    assert batch.counts.malformed_lines == 1


def test_command_uses_cipher_suite_3_and_hides_password():
    t = IpmiTarget.from_url("ipmi://admin:s%40cret@10.0.0.5:9623")
    assert t.password == "s@cret" and t.port == 9623
    argv = ipmitool_command(t)
    assert argv[argv.index("-C") + 1] == "3" and "-E" in argv and "s@cret" not in argv
    with pytest.raises(ValueError, match="ipmi://"):
        IpmiTarget.from_url("http://10.0.0.5")


@pytest.mark.ipmi
def test_live_bmc_read_and_value_change(ipmi_bmc):
    result = fetch_ipmi(ipmi_bmc.url, host="h1-r01-k01-n0")
    assert result.ok, result.error
    batch = result.batch
    temps = dict(zip(batch.select("gpu_temp_c").entity_index.tolist(), batch.select("gpu_temp_c").value.tolist()))
    from servers.ipmi_sim import GPU_TEMPS_C, PSU_POWER_RAW

    assert temps == {g: float(t) for g, t in enumerate(GPU_TEMPS_C)}
    assert batch.select("node_power_w").value.tolist() == [PSU_POWER_RAW * 4.0]
    assert batch.counts.unmapped_series == 0 and batch.counts.malformed_lines == 0

    ipmi_bmc.set_raw(2, 91)  # sensor 2 = GPU1 Temp

    def gpu1_temp_c() -> float:
        again = fetch_ipmi(ipmi_bmc.url, host="h1-r01-k01-n0")
        assert again.ok, again.error
        return dict(
            zip(again.batch.select("gpu_temp_c").entity_index.tolist(), again.batch.select("gpu_temp_c").value.tolist())
        )[1]

    assert poll_until(lambda: gpu1_temp_c() == 91, 5.0, interval_s=0.1)


@pytest.mark.ipmi
def test_wrong_password_and_dead_port_give_results_not_exceptions(ipmi_bmc):
    bad = fetch_ipmi(f"ipmi://admin:wrong@127.0.0.1:{ipmi_bmc.port}", retries=1, backoff_s=0.01, timeout_s=10)
    assert not bad.ok and bad.stale and bad.attempts == 2 and "exited" in bad.error
    assert len(bad.batch) == 0
    from servers.ipmi_sim import free_udp_port

    dead = fetch_ipmi(f"ipmi://admin:secret@127.0.0.1:{free_udp_port()}", retries=0, timeout_s=1.5)
    assert not dead.ok and dead.attempts == 1 and dead.error
