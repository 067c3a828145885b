"""Headless replay: re-run the twin on a recording's inputs every frame and score it against the recorded readings.

Inputs taken from the recording (what the world told the live twin): GPU utilisation (per
GPU where the bundle keeps detail, else the rack mean), CDU pumps and measured flow,
facility supply temperature per loop, outdoor conditions, failed power elements, sources
and links, nodes powered off.  Everything else — temperatures, power, throttling — the
twin projects, and :class:`ReplayResult` holds per-signal errors (:mod:`ingest.replay.metrics`).

Signals compared (recorded → projected): ``gpu_temp_c``, ``hbm_temp_c`` and ``gpu_power_w``
of the detail GPUs, ``rack_max_gpu_temp_c`` and ``rack_mean_gpu_power_w`` of every rack,
``rack_power_kw``, ``coolant_supply_temp_c`` and ``coolant_return_temp_c`` per CDU,
``it_power_mw`` and, when the recording reports the throughput of the site's default job,
``job_tokens_per_s`` (projected every :data:`JOB_EVERY_FRAMES` frames on the replayed
throttling and links).  In recordings of the live hub, rack power, CDU temperatures, IT
power and job throughput are the live twin's own estimates (no sensor gives them), so
their errors measure replay consistency, not the model.

A scenario (:mod:`twin.site.scenario`) is applied on top of the recorded inputs: its
failures are added, its pump losses subtracted, its loop supply temperatures and power
cap override; the result then answers "would this have survived?".
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

import numpy as np
import pandas as pd

from ingest.replay.bundle import Bundle
from ingest.replay.metrics import fit_errors
from twin.engine.snapshot import GPU_DOWN, GPU_THROTTLED
from twin.engine.tick import TickInputs, TwinEngine
from twin.site.scenario import Scenario
from twin.site.tables import SiteTables
from twin.training.sitejob import evaluate_site_job

JOB_EVERY_FRAMES = 6  # job throughput is projected every 6th frame (30 s at 5 s; ~0.1 s for a 24k-GPU job)


@dataclass
class Recording:
    """A bundle's tables pivoted to arrays [n_frames, n_entities] on the site's dense ids."""

    ts: list[datetime]
    dt_s: np.ndarray
    rack: dict[str, np.ndarray]
    cdu: dict[str, np.ndarray]
    loop_supply_temp_c: np.ndarray
    gpu_ids: np.ndarray
    gpu: dict[str, np.ndarray]  # [n_frames, n_detail_gpus]
    site: pd.DataFrame

    def __post_init__(self) -> None:
        self.site_rows = self.site.to_dict("records")  # row access in the replay loop, without pandas indexing

    @property
    def n_frames(self) -> int:
        return len(self.ts)

    @property
    def duration_s(self) -> float:
        return float(self.dt_s[1:].sum())


def _pivot(frame: pd.DataFrame, id_col: str, n_ids: int, ts_index: pd.Index, columns) -> dict[str, np.ndarray]:
    t = ts_index.get_indexer(frame["ts"])
    ids = frame[id_col].to_numpy()
    out = {}
    for c in columns:
        arr = np.full((len(ts_index), n_ids), np.nan)
        arr[t, ids] = frame[c].to_numpy(dtype=np.float64)
        out[c] = arr
    return out


def load_recording(bundle: Bundle, state: SiteTables) -> Recording:
    """Pivot ``bundle`` onto ``state``'s ids (the bundle must have been validated against it)."""
    site = bundle.frame("site").sort_values("ts").reset_index(drop=True)
    index = pd.Index(site["ts"])
    ts = [t.to_pydatetime().astimezone(timezone.utc) for t in site["ts"]]
    secs = np.array([t.timestamp() for t in ts])
    dt = np.diff(secs, prepend=secs[0])
    rack_df, cdu_df, loop_df, gpu_df = (bundle.frame(k) for k in ("rack", "cdu", "loop", "gpu"))
    rack = _pivot(rack_df, "rack_id", state.n_racks, index, rack_df.columns[2:])
    cdu = _pivot(cdu_df, "cdu_id", state.n_cdus, index, cdu_df.columns[2:])
    loop = _pivot(loop_df, "loop_id", len(state.loop_name), index, ["loop_supply_temp_c"])["loop_supply_temp_c"]
    gpu_ids = np.unique(gpu_df["gpu_id"].to_numpy()).astype(np.int64)
    local = pd.Index(gpu_ids)
    g = gpu_df.assign(local=local.get_indexer(gpu_df["gpu_id"]))
    gpu = _pivot(g, "local", gpu_ids.size, index, gpu_df.columns[2:])
    return Recording(ts, dt, rack, cdu, loop, gpu_ids, gpu, site)


def _ids(value) -> np.ndarray:
    return np.asarray(value if value is not None else [], dtype=np.int64)


def frame_inputs(rec: Recording, state: SiteTables, i: int, scenario: Scenario | None = None) -> TickInputs:
    """The twin inputs of frame ``i`` (see module docstring), with ``scenario`` applied on top."""
    util = rec.rack["rack_mean_util_frac"][i][state.gpu_rack]
    if rec.gpu_ids.size:
        detail = rec.gpu["gpu_util_frac"][i]
        util[rec.gpu_ids] = np.where(np.isfinite(detail), detail, util[rec.gpu_ids])
    pumps = rec.cdu["pumps_running_count"][i]
    installed = state.cdu_spec_array("pumps")
    pumps = np.where(np.isfinite(pumps), pumps, installed)
    row = rec.site_rows[i]
    nodes_off = np.zeros(state.n_nodes, dtype=bool)
    nodes_off[_ids(row["nodes_off"])] = True
    inp = TickInputs(
        ts=rec.ts[i], gpu_util_frac=util, pumps_running_count=pumps.astype(np.int64),
        cdu_flow_lpm=rec.cdu["coolant_flow_lpm"][i], loop_supply_temp_c=rec.loop_supply_temp_c[i].copy(),
        failed_power=_ids(row["failed_power"]), failed_sources=_ids(row["failed_sources"]),
        failed_links=_ids(row["failed_links"]), nodes_off=nodes_off if nodes_off.any() else None,
        outdoor_dry_bulb_c=float(row["outdoor_dry_bulb_c"]) if np.isfinite(row["outdoor_dry_bulb_c"]) else None,
        outdoor_wet_bulb_c=float(row["outdoor_wet_bulb_c"]) if np.isfinite(row["outdoor_wet_bulb_c"]) else None,
    )
    return inp if scenario is None else apply_scenario(inp, scenario, state)


def apply_scenario(inp: TickInputs, scenario: Scenario, state: SiteTables) -> TickInputs:
    """``inp`` with the scenario's failures added and its overrides applied."""
    sc = scenario.inputs
    inp.failed_power = np.union1d(inp.failed_power, _ids(sc.failed_power))
    inp.failed_sources = np.union1d(inp.failed_sources, _ids(sc.failed_sources))
    inp.failed_links = np.union1d(inp.failed_links, _ids(sc.failed_links))
    if sc.pumps_running_count is not None:
        lost = state.cdu_spec_array("pumps") - np.asarray(sc.pumps_running_count)
        inp.pumps_running_count = np.maximum(inp.pumps_running_count - lost, 0).astype(np.int64)
        inp.cdu_flow_lpm = np.where(lost > 0, np.nan, inp.cdu_flow_lpm)  # the pump model decides the new flow
    if sc.loop_supply_temp_c is not None:
        override = np.asarray(sc.loop_supply_temp_c, dtype=np.float64)
        inp.loop_supply_temp_c = np.where(np.isfinite(override), override, inp.loop_supply_temp_c)
    if sc.gpu_power_limit_w is not None:
        inp.gpu_power_limit_w = sc.gpu_power_limit_w
    for key in ("outdoor_dry_bulb_c", "outdoor_wet_bulb_c"):
        if getattr(sc, key) is not None:
            setattr(inp, key, getattr(sc, key))
    return inp


@dataclass
class ReplayResult:
    """What a replay produced: speed, per-signal errors, the projected series and the outcome."""

    incident: str
    frames: int
    duration_s: float
    wall_s: float
    gpus: int
    signals: dict[str, dict[str, float]]
    series: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # signal → (recorded, projected)
    outcome: dict[str, float] = field(default_factory=dict)

    @property
    def speed_x(self) -> float:
        return self.duration_s / self.wall_s if self.wall_s > 0 else float("inf")

    @property
    def gpu_ticks_per_s(self) -> float:
        return self.gpus * max(self.frames - 1, 0) / self.wall_s if self.wall_s > 0 else float("inf")

    def as_dict(self) -> dict:
        return {"incident": self.incident, "frames": self.frames, "duration_s": self.duration_s,
                "wall_s": self.wall_s, "speed_x": self.speed_x, "gpu_ticks_per_s": self.gpu_ticks_per_s,
                "gpus": self.gpus, "signals": self.signals, "outcome": self.outcome}


class Replayer:
    """Runs the twin over a recording (see module docstring)."""

    def __init__(self, state: SiteTables, rec: Recording, *, scenario: Scenario | None = None,
                 engine_setup=None, job=None, job_every: int = JOB_EVERY_FRAMES) -> None:
        self.state, self.rec, self.scenario = state, rec, scenario
        self.engine_setup = engine_setup  # called with the fresh TwinEngine (calibrated parameters)
        self.job, self.job_every = job, job_every  # a PlacedJob whose throughput is projected

    def _tokens_per_s(self, snap) -> float:
        throttle = np.where(snap.gpu_state == GPU_DOWN, 0.0, snap.throttle_frac)
        return evaluate_site_job(self.state, self.job.spec, self.job.gpu_ids, throttle, snap.link_up_flag).status.tokens_per_s

    def run(self, frames: range | None = None, speed: float | None = None, *,
            gpu_r_th_factor: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Projected series over ``frames`` (default all), paced at ``speed``× real time (None: as fast as possible).

        Returns signal → array [n_frames, n_entities] (row 0 is the settled start).
        """
        s, rec = self.state, self.rec
        frames = frames or range(rec.n_frames)
        engine = TwinEngine(s, start=rec.ts[frames[0]], settle=False)
        if self.engine_setup is not None:
            self.engine_setup(engine)
        gpu_rack_max = engine.by_rack
        out: dict[str, list] = {k: [] for k in ("gpu_temp_c", "hbm_temp_c", "gpu_power_w", "rack_max_gpu_temp_c",
                                                "rack_mean_gpu_power_w", "rack_power_kw", "coolant_supply_temp_c",
                                                "coolant_return_temp_c",
                                                "it_power_mw", "job_tokens_per_s", "gpus_throttled", "gpus_down",
                                                "max_gpu_temp_c")}
        t_start = time.perf_counter()
        for n, i in enumerate(frames):
            inp = frame_inputs(rec, s, i, self.scenario)
            inp.gpu_r_th_factor = gpu_r_th_factor
            snap = engine.settle(inp) if n == 0 else engine.tick(float(rec.dt_s[i]), inp)
            live = snap.gpu_state != GPU_DOWN
            out["gpu_temp_c"].append(snap.gpu_temp_c[rec.gpu_ids])
            out["hbm_temp_c"].append(snap.hbm_temp_c[rec.gpu_ids])
            out["gpu_power_w"].append(snap.gpu_power_w[rec.gpu_ids])
            out["rack_max_gpu_temp_c"].append(snap.rack_max_gpu_temp_c)
            out["rack_mean_gpu_power_w"].append(gpu_rack_max.sum(np.where(live, snap.gpu_power_w, 0.0))
                                                / np.maximum(gpu_rack_max.sum(live), 1))
            out["rack_power_kw"].append(snap.rack_power_kw)
            out["coolant_supply_temp_c"].append(snap.cdu_supply_temp_c)
            out["coolant_return_temp_c"].append(snap.cdu_return_temp_c)
            out["it_power_mw"].append(np.array([snap.it_power_mw]))
            due = self.job is not None and (n % self.job_every == 0 or n == len(frames) - 1)
            out["job_tokens_per_s"].append(np.array([self._tokens_per_s(snap) if due else np.nan]))
            out["gpus_throttled"].append(np.array([np.count_nonzero(snap.gpu_state == GPU_THROTTLED)]))
            out["gpus_down"].append(np.array([np.count_nonzero(~live)]))
            out["max_gpu_temp_c"].append(np.array([np.nanmax(snap.gpu_temp_c)]))
            if speed is not None and n > 0:
                ahead_s = (rec.ts[i] - rec.ts[frames[0]]).total_seconds() / speed - (time.perf_counter() - t_start)
                if ahead_s > 0:
                    time.sleep(ahead_s)
        return {k: np.stack(v) for k, v in out.items()}

    def recorded(self, frames: range | None = None) -> dict[str, np.ndarray]:
        """The recorded series matching :meth:`run`'s signals."""
        rec = self.rec
        idx = np.asarray(frames or range(rec.n_frames))
        it = rec.site["it_power_mw"].to_numpy(dtype=np.float64)[idx, None]
        return {"gpu_temp_c": rec.gpu["gpu_temp_c"][idx], "hbm_temp_c": rec.gpu["hbm_temp_c"][idx],
                "gpu_power_w": rec.gpu["gpu_power_w"][idx],
                "rack_max_gpu_temp_c": rec.rack["rack_max_gpu_temp_c"][idx],
                "rack_mean_gpu_power_w": rec.rack["rack_mean_gpu_power_w"][idx],
                "rack_power_kw": rec.rack["rack_power_kw"][idx],
                "coolant_supply_temp_c": rec.cdu["coolant_supply_temp_c"][idx],
                "coolant_return_temp_c": rec.cdu["coolant_return_temp_c"][idx], "it_power_mw": it,
                "job_tokens_per_s": rec.site["job_tokens_per_s"].to_numpy(dtype=np.float64)[idx, None]}


def score(recorded: dict[str, np.ndarray], projected: dict[str, np.ndarray], skip: int = 1) -> dict[str, dict]:
    """Per-signal CV(RMSE) and NMBE, leaving out the first ``skip`` frames (the settled start)."""
    out = {}
    for name, y in recorded.items():
        yhat = projected[name]
        if name in ("gpu_temp_c", "hbm_temp_c", "gpu_power_w"):
            # a GPU reported down has no reading to compare
            y = np.where(recorded["gpu_power_w"] > 0, y, np.nan)
        out[name] = fit_errors(y[skip:], yhat[skip:])
    return out


def recorded_job(state: SiteTables, rec: Recording):
    """The site's default job placed as the live hub places it, when the recording reports its throughput."""
    if not state.default_job or not np.isfinite(rec.site["job_tokens_per_s"].to_numpy(dtype=np.float64)).any():
        return None
    from ingest.live.runtime import place_default_job

    jobs = place_default_job(state)
    return jobs[0] if jobs else None


def replay(bundle: Bundle, state: SiteTables, *, speed: float | None = None, scenario: Scenario | None = None,
           rec: Recording | None = None, engine_setup=None, gpu_r_th_factor=None) -> ReplayResult:
    """Replay ``bundle`` on ``state`` (see module docstring)."""
    rec = rec or load_recording(bundle, state)
    player = Replayer(state, rec, scenario=scenario, engine_setup=engine_setup, job=recorded_job(state, rec))
    t0 = time.perf_counter()
    projected = player.run(speed=speed, gpu_r_th_factor=gpu_r_th_factor)
    wall = time.perf_counter() - t0
    recorded = player.recorded()
    outcome = {"max_gpu_temp_c": float(np.nanmax(projected["max_gpu_temp_c"])),
               "max_gpus_throttled": int(projected["gpus_throttled"].max()),
               "max_gpus_down": int(projected["gpus_down"].max())}
    return ReplayResult(bundle.name, rec.n_frames, rec.duration_s, wall, state.n_gpus,
                        score(recorded, projected), {k: (recorded[k], projected[k]) for k in recorded}, outcome)
