"""Canonical quantity names: the one list of what the twin measures and in which unit.

Every array in the twin state, every stored telemetry field and every normalised
ingest sample uses one of these names.  The suffix carries the unit (habit 1 of
CONVENTIONS.md): ``_w`` watts, ``_kw`` kilowatts, ``_mw`` megawatts, ``_c`` degrees
Celsius, ``_k`` kelvin (temperature differences), ``_lpm`` litres per minute,
``_kpa`` kilopascals, ``_mhz`` megahertz, ``_frac`` a 0–1 fraction (never percent),
``_j`` joules, ``_s`` seconds, ``_h`` hours, ``_gbps`` gigabits per second, ``_total`` a counter.

``README.md`` carries the same table; ``tests/twin/test_quantities.py`` checks the two
agree, so edit here and regenerate with ``clustertwin units --markdown``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Quantity:
    """One canonical quantity: its name, unit symbol, entity kind and meaning."""

    name: str
    unit: str
    entity: str
    description: str


_Q = Quantity

QUANTITIES: tuple[Quantity, ...] = (
    # GPU
    _Q("gpu_temp_c", "°C", "gpu", "GPU die (core) temperature"),
    _Q("hbm_temp_c", "°C", "gpu", "HBM memory temperature"),
    _Q("gpu_power_w", "W", "gpu", "GPU board power"),
    _Q("gpu_energy_j", "J", "gpu", "GPU energy counter since driver load"),
    _Q("gpu_util_frac", "1", "gpu", "fraction of time a kernel was running"),
    _Q("tensor_active_frac", "1", "gpu", "tensor-pipe active ratio (profiling counter)"),
    _Q("sm_clock_mhz", "MHz", "gpu", "SM clock"),
    _Q("mem_clock_mhz", "MHz", "gpu", "memory clock"),
    _Q("power_limit_w", "W", "gpu", "enforced board power limit"),
    _Q("fb_used_mib", "MiB", "gpu", "frame-buffer memory in use"),
    _Q("clock_event_mask", "bitmask", "gpu", "clock-event (throttle) reason bits, NVML layout"),
    _Q("xid_last", "code", "gpu", "last XID error code, 0 if none"),
    _Q("ecc_dbe_total", "count", "gpu", "double-bit ECC errors (volatile)"),
    _Q("pcie_replay_total", "count", "gpu", "PCIe replay counter"),
    _Q("nvlink_crc_error_total", "count", "gpu", "NVLink CRC flit errors"),
    _Q("throttle_frac", "1", "gpu", "clock/throughput factor after throttling (1 = full speed)"),
    # Node
    _Q("node_power_w", "W", "node", "node input power at the PSUs"),
    _Q("cpu_temp_c", "°C", "node", "CPU temperature"),
    _Q("inlet_temp_c", "°C", "node", "air inlet temperature"),
    _Q("fan_speed_rpm", "rpm", "node", "fan speed"),
    _Q("psu_power_w", "W", "psu", "PSU input power"),
    # Rack and CDU
    _Q("rack_power_kw", "kW", "rack", "rack IT input power"),
    _Q("coolant_supply_temp_c", "°C", "cdu", "secondary (rack-side) coolant supply temperature"),
    _Q("coolant_return_temp_c", "°C", "cdu", "secondary coolant return temperature"),
    _Q("coolant_flow_lpm", "L/min", "cdu", "secondary coolant flow"),
    _Q("coolant_delta_t_k", "K", "cdu", "secondary return minus supply"),
    _Q("coolant_pressure_kpa", "kPa", "cdu", "secondary differential pressure"),
    _Q("facility_supply_temp_c", "°C", "cdu", "primary (facility water) supply temperature"),
    _Q("facility_return_temp_c", "°C", "cdu", "primary (facility water) return temperature"),
    _Q("facility_flow_lpm", "L/min", "cdu", "primary (facility water) flow"),
    _Q("cdu_heat_kw", "kW", "cdu", "heat removed by the CDU"),
    _Q("cdu_capacity_kw", "kW", "cdu", "heat the CDU can remove at the present supply temperature"),
    _Q("pump_speed_frac", "1", "pump", "pump speed as a fraction of maximum"),
    _Q("pumps_running_total", "count", "cdu", "pumps running"),
    _Q("leak_detected", "bool", "cdu", "a leak detector reports a leak"),
    # Power tree
    _Q("feed_power_kw", "kW", "power_element", "power through a feed element (busway, PDU, UPS, transformer)"),
    _Q("feed_current_a", "A", "power_element", "current through a feed element"),
    _Q("feed_voltage_v", "V", "power_element", "voltage at a feed element"),
    _Q("load_frac", "1", "power_element", "load as a fraction of the element's usable rating"),
    _Q("source_power_mw", "MW", "source", "power delivered by a source"),
    _Q("battery_soc_frac", "1", "source", "battery state of charge"),
    # Fabric
    _Q("link_up", "bool", "link", "link is up"),
    _Q("link_util_frac", "1", "link", "link utilisation"),
    _Q("link_flaps_total", "count", "link", "link state changes"),
    # Site and jobs
    _Q("it_power_mw", "MW", "site", "IT load"),
    _Q("facility_power_mw", "MW", "site", "IT plus cooling and losses"),
    _Q("pue_ratio", "1", "site", "facility power over IT power (racks and network)"),
    _Q("outdoor_wet_bulb_c", "°C", "site", "outdoor wet-bulb temperature"),
    _Q("outdoor_dry_bulb_c", "°C", "site", "outdoor dry-bulb temperature"),
    _Q("tokens_per_s", "1/s", "job", "training tokens per second"),
    _Q("step_time_s", "s", "job", "training step time"),
    _Q("mfu_frac", "1", "job", "model FLOP utilisation"),
    _Q("tflops_per_gpu", "TFLOP/s", "job", "model FLOPs per second per GPU (no recomputation)"),
    _Q("tokens_per_joule", "1/J", "job", "training tokens per joule of GPU and node power"),
    _Q("ettr_frac", "1", "job", "effective training time ratio"),
    _Q("goodput_tokens_per_s", "1/s", "job", "tokens per second after failures and checkpoints"),
    _Q("job_mttf_h", "h", "job", "mean time between job interruptions"),
)

BY_NAME: dict[str, Quantity] = {q.name: q for q in QUANTITIES}


def quantity(name: str) -> Quantity:
    """Return the canonical quantity ``name`` or raise ``KeyError`` naming it."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown quantity {name!r}; canonical names live in twin/quantities.py") from None


def markdown_table() -> str:
    """The nomenclature table as Markdown (the README embeds exactly this text)."""
    lines = ["| name | unit | entity | meaning |", "|---|---|---|---|"]
    lines += [f"| `{q.name}` | {q.unit} | {q.entity} | {q.description} |" for q in QUANTITIES]
    return "\n".join(lines)
