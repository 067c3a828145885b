"""A stand-in for the live hub's view and alert actions, serving synthetic but plausible data.

:class:`StandinView` is a live view (:class:`twin.engine.view.View`) like the live hub's
``ingest.live.view.LiveView`` (``latest_tick``, ``latest``, ``trend``, ``rack_history``,
``alerts``, ``source_ages``) and serves a snapshot made by :func:`synthetic_snapshot`
(with no tick detail unless one is given).  Its :attr:`StandinView.actions`
(:class:`StandinAlertActions`: ``acknowledge``, ``silence``, ``unsilence``) change its
alerts, as the hub's ``ingest.live.alert_actions.AlertActions`` change the stored ones.
It exists for tests that need a fast, deterministic live view; the served app and the
benchmark use the real hub.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd

from twin.engine.snapshot import GPU_DOWN, GPU_OK, GPU_THROTTLED, JobStatus, Snapshot
from twin.engine.view import ViewTick
from twin.site.tables import SiteTables

TREND_COLUMNS = (
    "it_power_mw",
    "facility_power_mw",
    "generation_capacity_mw",
    "pue_ratio",
    "gpus_throttled",
    "gpus_down",
    "max_gpu_temp_c",
    "tokens_per_s",
    "mfu_frac",
)
WATER_HEAT_J_PER_L_K = 4180.0  # water, 1 kg/L × 4.18 kJ/(kg·K)


def _rack_max(values: np.ndarray, rack: np.ndarray, n_racks: int) -> np.ndarray:
    out = np.full(n_racks, -np.inf)
    np.maximum.at(out, rack, values)
    out[~np.isfinite(out)] = np.nan
    return out


def _power_tree_load_kw(state: SiteTables, rack_power_kw: np.ndarray) -> np.ndarray:
    """Load of every power element: racks split evenly over their feeds, summed upstream."""
    load = np.zeros(state.n_power)
    dual = state.rack_feed_b >= 0
    share = np.where(dual, 0.5, 1.0) * rack_power_kw
    np.add.at(load, state.rack_feed_a, share)
    np.add.at(load, state.rack_feed_b[dual], share[dual])
    for depth in range(int(state.power_depth.max(initial=0)), 0, -1):
        children = np.flatnonzero((state.power_depth == depth) & (state.power_parent >= 0))
        eff = state.power_efficiency_frac[children]
        np.add.at(load, state.power_parent[children], load[children] / np.where(eff > 0, eff, 1.0))
    return load


def synthetic_snapshot(state: SiteTables, ts: datetime | None = None, seed: int = 0) -> Snapshot:
    """A plausible snapshot of ``state``: busy GPUs, a few hot racks, throttled and down GPUs."""
    rng = np.random.default_rng(seed)
    ts = ts or datetime.now(UTC)
    n_gpus, n_racks = state.n_gpus, state.n_racks
    tdp_w = state.gpu_spec_array("tdp_w")
    util = np.clip(rng.normal(0.85, 0.08, n_gpus), 0.05, 1.0)
    hot_rack = rng.random(n_racks) < 0.03
    gpu_power_w = tdp_w * (0.25 + 0.72 * util)
    gpu_temp_c = 38.0 + 0.045 * gpu_power_w + rng.normal(0, 2.0, n_gpus) + 9.0 * hot_rack[state.gpu_rack]
    state_code = np.full(n_gpus, GPU_OK, dtype=np.int8)
    state_code[rng.random(n_gpus) < 0.004] = GPU_THROTTLED
    state_code[gpu_temp_c > state.gpu_spec_array("slowdown_temp_c")] = GPU_THROTTLED
    down = rng.random(n_gpus) < 0.0008
    state_code[down] = GPU_DOWN
    gpu_power_w = np.where(down, 0.0, gpu_power_w)
    gpu_temp_c = np.where(down, np.nan, gpu_temp_c)
    throttle_frac = np.where(state_code == GPU_THROTTLED, rng.uniform(0.6, 0.9, n_gpus), 1.0)
    throttle_frac[down] = 0.0
    xid = np.zeros(n_gpus, dtype=np.int16)
    xid[down] = rng.choice(np.array([48, 79, 94], dtype=np.int16), int(down.sum()))
    sm_clock = state.gpu_spec_array("max_sm_clock_mhz") * throttle_frac

    node_base_kw = np.bincount(state.node_rack, state.node_base_power_w, n_racks) / 1000.0
    rack_power_kw = np.bincount(state.gpu_rack, gpu_power_w, n_racks) / 1000.0 + node_base_kw
    rack_max_temp = _rack_max(np.nan_to_num(gpu_temp_c, nan=-np.inf), state.gpu_rack, n_racks)
    ttt = np.where(hot_rack, rng.uniform(30, 120, n_racks), rng.uniform(200, 900, n_racks))

    n_cdus = state.n_cdus
    cdu_heat_kw = np.bincount(state.rack_cdu, rack_power_kw, n_cdus)
    supply_c = np.full(n_cdus, 30.0) + rng.normal(0, 0.3, n_cdus)
    cap = (
        np.array(
            [
                np.interp(s, state.cdu_specs[k].capacity_curve_supply_c, state.cdu_specs[k].capacity_curve_kw)
                for s, k in zip(supply_c, state.cdu_spec)
            ]
        )
        if n_cdus
        else np.zeros(0)
    )
    flow_lpm = state.cdu_spec_array("design_flow_lpm") * rng.uniform(0.9, 1.0, n_cdus)
    return_c = supply_c + cdu_heat_kw * 1000.0 / (flow_lpm / 60.0 * WATER_HEAT_J_PER_L_K)
    pumps = state.cdu_spec_array("pumps").astype(np.int8)
    pumps[rng.random(n_cdus) < 0.05] -= 1

    n_loops = len(state.loop_name)
    loop_heat = np.bincount(state.cdu_loop, cdu_heat_kw, n_loops)
    feed_power_kw = _power_tree_load_kw(state, rack_power_kw)
    usable_kw = state.power_rating_kw * state.power_max_util_frac
    load_frac = feed_power_kw / np.where(usable_kw > 0, usable_kw, np.nan)

    it_mw = float(rack_power_kw.sum() / 1000.0)
    cooling_mw = it_mw * 0.12
    facility_mw = it_mw + cooling_mw + it_mw * 0.04 + state.site_overhead_mw
    capacity_mw = max(float(state.source_capacity_mw[state.source_kind != 2].sum()), 1.2 * facility_mw)
    source_power = state.source_capacity_mw * min(1.0, facility_mw / capacity_mw) if state.n_sources else np.zeros(0)
    soc = np.where(state.source_kind == 2, 0.8, np.nan)

    all_gpus = np.arange(n_gpus, dtype=np.int32)
    job = JobStatus(
        name="pretrain-70b",
        gpu_ids=all_gpus,
        step_time_s=6.2,
        tokens_per_s=n_gpus * 410.0 * float(throttle_frac.mean()),
        gpu_model_tflops=420.0,
        mfu_frac=0.42,
        goodput_tokens_per_s=n_gpus * 380.0,
        ettr_frac=0.93,
        checkpoint_interval_s=1800.0,
        breakdown_s={"compute": 4.9, "exposed_comm": 0.9, "straggler": 0.4},
        bottleneck_racks=np.flatnonzero(hot_rack)[:5].astype(np.int32),
        drain_gain_frac=0.01,
    )
    return Snapshot(
        ts=ts,
        gpu_temp_c=gpu_temp_c,
        hbm_temp_c=gpu_temp_c + 4.0,
        gpu_power_w=gpu_power_w,
        gpu_util_frac=util,
        sm_clock_mhz=sm_clock,
        throttle_frac=throttle_frac,
        gpu_state=state_code,
        last_xid_code=xid,
        rack_power_kw=rack_power_kw,
        rack_max_gpu_temp_c=rack_max_temp,
        rack_time_to_throttle_s=ttt,
        coolant_supply_temp_c=supply_c,
        coolant_return_temp_c=return_c,
        coolant_flow_lpm=flow_lpm,
        cdu_heat_kw=cdu_heat_kw,
        cdu_capacity_kw=cap,
        pumps_running_count=pumps,
        loop_supply_temp_c=np.full(n_loops, 24.0),
        loop_return_temp_c=np.full(n_loops, 34.0),
        loop_heat_kw=loop_heat,
        feed_power_kw=feed_power_kw,
        load_frac=load_frac,
        power_n1_load_frac=np.where(state.power_parent >= 0, 2 * load_frac, load_frac),
        source_power_mw=source_power,
        battery_soc_frac=soc,
        link_up_flag=rng.random(state.n_links) > 0.001,
        link_util_frac=rng.uniform(0.2, 0.8, state.n_links),
        it_power_mw=it_mw,
        cooling_power_mw=cooling_mw,
        facility_power_mw=facility_mw,
        generation_capacity_mw=capacity_mw,
        pue_ratio=facility_mw / it_mw if it_mw else np.nan,
        outdoor_wet_bulb_c=22.0,
        outdoor_dry_bulb_c=31.0,
        swing_amplitude_mw=it_mw * 0.15,
        swing_ramp_mw_per_s=it_mw * 0.05,
        jobs=[job],
        source_age_s={"twin": 0.5, "dcgm": 1.2, "redfish": 14.0, "cdu-modbus": 3.0},
    )


def synthetic_trend(snapshot: Snapshot, window_s: float = 900, period_s: float = 2.0, seed: int = 0) -> pd.DataFrame:
    """A trend frame ending at the snapshot, wobbling around its values."""
    rng = np.random.default_rng(seed)
    n = max(2, int(window_s / period_s))
    index = pd.date_range(end=snapshot.ts, periods=n, freq=pd.Timedelta(seconds=period_s))
    phase = np.linspace(0, 6 * np.pi, n)
    wobble = 1.0 + 0.03 * np.sin(phase) + rng.normal(0, 0.005, n)
    job = snapshot.jobs[0] if snapshot.jobs else None
    base = {
        "it_power_mw": snapshot.it_power_mw,
        "facility_power_mw": snapshot.facility_power_mw,
        "generation_capacity_mw": snapshot.generation_capacity_mw,
        "pue_ratio": snapshot.pue_ratio,
        "gpus_throttled": float((snapshot.gpu_state == GPU_THROTTLED).sum()),
        "gpus_down": float((snapshot.gpu_state == GPU_DOWN).sum()),
        "max_gpu_temp_c": float(np.nanmax(snapshot.gpu_temp_c)),
        "tokens_per_s": job.tokens_per_s if job else np.nan,
        "mfu_frac": job.mfu_frac if job else np.nan,
    }
    frame = {name: value * (1.0 if name == "generation_capacity_mw" else wobble) for name, value in base.items()}
    return pd.DataFrame(frame, index=index)[list(TREND_COLUMNS)]


def synthetic_alerts(state: SiteTables, snapshot: Snapshot) -> list[dict]:
    """A handful of alerts about the hottest racks and a CDU, one already cleared."""
    hottest = np.argsort(np.nan_to_num(snapshot.rack_max_gpu_temp_c, nan=-1))[::-1][:3]
    alerts = []
    for i, rack in enumerate(hottest):
        alerts.append(
            dict(
                id=f"a{i + 1}",
                ts=snapshot.ts - timedelta(minutes=5 * i),
                severity="critical" if i == 0 else "warning",
                source="twin",
                entity_kind="rack",
                entity_id=int(rack),
                entity_name=state.rack_name[rack],
                metric="rack_max_gpu_temp_c",
                message=f"GPU temperature {snapshot.rack_max_gpu_temp_c[rack]:.1f} °C in rack {state.rack_name[rack]}",
                acknowledged=False,
                silenced_until=None,
                cleared_at=None,
                key=f"gpu_hot:rack:{int(rack)}",
                group=f"gpu_hot:rack:{int(rack)}",
                impact={"gpus": 64, "jobs": [], "tokens_per_s": 0.0, "power_mw": 0.0},
                runbook="Check the rack's CDU flow and supply.",
            )
        )
    if state.n_cdus:
        alerts.append(
            dict(
                id="a9",
                ts=snapshot.ts - timedelta(hours=2),
                severity="info",
                source="cdu-modbus",
                entity_kind="cdu",
                entity_id=0,
                entity_name=state.cdu_name[0],
                metric="pumps_running_count",
                message="pump 2 restarted",
                acknowledged=True,
                silenced_until=None,
                cleared_at=snapshot.ts - timedelta(hours=1),
            )
        )
    return alerts


class StandinView:
    """Serves one synthetic snapshot (or one you set) with the live view's interface."""

    key = "live"
    label = "live"
    is_live = True

    def __init__(
        self, state: SiteTables, snapshot: Snapshot | None = None, seed: int = 0, live: bool = False, detail=None
    ):
        """``live=True`` stamps the snapshot with the current time on every read (never stale).

        ``detail`` is the ``TickDetail`` served with every snapshot (None: the pages' fallbacks).
        """
        self.state = state
        self.live = live
        self.site_name = state.name
        self.snapshot = snapshot if snapshot is not None else synthetic_snapshot(state, seed=seed)
        self.tick_detail = detail
        self._alerts = synthetic_alerts(state, self.snapshot)
        self._seed = seed
        self.actions = StandinAlertActions(self)

    def latest_tick(self) -> ViewTick:
        snapshot = replace(self.snapshot, ts=datetime.now(UTC)) if self.live else self.snapshot
        return ViewTick(snapshot, self.tick_detail)

    def latest(self) -> Snapshot | None:
        return self.latest_tick().snapshot

    def trend(self, window_s: float = 900) -> pd.DataFrame:
        return synthetic_trend(self.latest(), window_s, seed=self._seed)

    def rack_history(self, rack_id: int, window_s: float = 600) -> pd.DataFrame:
        """Long format ts/gpu/metric/value for the GPUs of one rack."""
        gpus = np.flatnonzero(self.state.gpu_rack == rack_id)
        n = max(2, int(window_s / 10))
        ts = pd.date_range(end=self.snapshot.ts, periods=n, freq=pd.Timedelta(seconds=10))
        rng = np.random.default_rng(rack_id)
        rows = []
        for metric, values in (("gpu_temp_c", self.snapshot.gpu_temp_c), ("gpu_power_w", self.snapshot.gpu_power_w)):
            noise = 1.0 + rng.normal(0, 0.01, (n, gpus.size))
            grid = values[gpus][None, :] * noise
            rows.append(
                pd.DataFrame(
                    {
                        "ts": np.repeat(ts, gpus.size),
                        "gpu": np.tile(gpus, n),
                        "metric": metric,
                        "value": grid.ravel(),
                    }
                )
            )
        return pd.concat(rows, ignore_index=True)

    def placed_jobs(self) -> list:
        """No job specs behind the stand-in's synthetic job statuses."""
        return []

    def job_timeline(self, job_name: str) -> list[dict]:
        return []

    def cdu_history(self, cdu_id: int, window_s: float = 600) -> pd.DataFrame:
        """The CDU's snapshot values with 1 % noise every 10 s over the window."""
        n = max(2, int(window_s / 10))
        ts = pd.date_range(end=self.snapshot.ts, periods=n, freq=pd.Timedelta(seconds=10), name="ts")
        snap, rng = self.snapshot, np.random.default_rng(cdu_id)
        values = {
            "coolant_supply_temp_c": snap.coolant_supply_temp_c,
            "coolant_return_temp_c": snap.coolant_return_temp_c,
            "coolant_flow_lpm": snap.coolant_flow_lpm,
            "cdu_heat_kw": snap.cdu_heat_kw,
            "cdu_capacity_kw": snap.cdu_capacity_kw,
            "pumps_running_count": snap.pumps_running_count,
        }
        return pd.DataFrame({k: float(v[cdu_id]) * (1.0 + rng.normal(0, 0.01, n)) for k, v in values.items()}, index=ts)

    def alerts(self, active_only: bool = True) -> list[dict]:
        rows = [dict(a) for a in self._alerts]
        return [a for a in rows if a["cleared_at"] is None] if active_only else rows

    def source_ages(self) -> dict[str, float]:
        return dict(self.snapshot.source_age_s)


class StandinAlertActions:
    """Acknowledge, silence and unsilence the alerts of a :class:`StandinView` (in memory)."""

    def __init__(self, view: StandinView) -> None:
        self.view = view

    def _alert(self, alert_id: str) -> dict:
        for alert in self.view._alerts:
            if alert["id"] == alert_id:
                return alert
        raise KeyError(f"no alert with id {alert_id!r}")

    def acknowledge(self, alert_id: str, comment: str = "", user: str = "") -> None:
        alert = self._alert(alert_id)
        alert["acknowledged"], alert["ack_comment"] = True, comment

    def unsilence(self, alert_id: str) -> None:
        self._alert(alert_id)["silenced_until"] = None

    def silence(self, alert_id: str, duration_s: float) -> None:
        self._alert(alert_id)["silenced_until"] = datetime.now(UTC) + timedelta(seconds=duration_s)


def standin_app(view: StandinView, **kwargs):
    """The dashboard app over ``view`` and its alert actions (``kwargs`` as for ``create_app``)."""
    from dashboard.app import create_app

    return create_app(view, view.actions, **kwargs)
