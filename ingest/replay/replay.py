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
``job_tokens_per_s`` (projected on the replayed throttling and links, evaluated once per
distinct set of slowed GPUs and failed links).  In recordings of the live hub, rack power, CDU temperatures, IT
power and job throughput are the live twin's own estimates (no sensor gives them), so
their errors measure replay consistency, not the model.

The twin ticks every :data:`TICK_S` seconds, as live, with the recorded inputs held or
interpolated between frames (:mod:`ingest.replay.ticking`); a large site is cut into hall
shards ticked in parallel processes (:mod:`ingest.replay.shards`, :mod:`ingest.replay.parallel`),
unless a source fails (then the site's shortfall policy, which caps every hall's GPUs
from the whole site's balance, may act: one process).

A scenario (:mod:`twin.scenario.conditions`) is applied on top of the recorded inputs: its
failures are added, its pump losses subtracted, its loop supply temperatures and power
cap override; the result then answers "would this have survived?".
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ingest.replay.bundle import Bundle
from ingest.replay.engine import ReplayEngine
from ingest.replay.metrics import fit_errors
from ingest.replay.parallel import cached_shards, default_workers, run_parallel
from ingest.replay.recording import Recording, id_array, load_recording
from ingest.replay.remap import RemapReport, power_on_job_nodes, remap_recording
from ingest.replay.shards import Shard
from ingest.replay.ticking import CDU_SIGNALS, GPU_SIGNALS, RACK_SIGNALS, SUMMED, ShardRun, run_shard
from twin.engine.tick import TickInputs, TwinEngine
from twin.reports import Report
from twin.scenario.conditions import Scenario
from twin.site.tables import SiteTables
from twin.training.sitejob import evaluate_site_job

TICK_S = 1.0  # the twin's cadence during a replay, as live (recorded inputs held or interpolated between frames)
JOB_CLOCK_STEP_FRAC = 0.01  # job throughput is re-evaluated when a job GPU's clock moves by a step this size


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
    nodes_off[id_array(row["nodes_off"])] = True
    inp = TickInputs(
        ts=rec.ts[i],
        gpu_util_frac=util,
        pumps_running_count=pumps.astype(np.int64),
        coolant_flow_lpm=rec.cdu["coolant_flow_lpm"][i],
        loop_supply_temp_c=rec.loop_supply_temp_c[i].copy(),
        failed_power=id_array(row["failed_power"]),
        failed_sources=id_array(row["failed_sources"]),
        failed_links=id_array(row["failed_links"]),
        nodes_off=nodes_off if nodes_off.any() else None,
        outdoor_dry_bulb_c=float(row["outdoor_dry_bulb_c"]) if np.isfinite(row["outdoor_dry_bulb_c"]) else None,
        outdoor_wet_bulb_c=float(row["outdoor_wet_bulb_c"]) if np.isfinite(row["outdoor_wet_bulb_c"]) else None,
    )
    return inp if scenario is None else apply_scenario(inp, scenario, state)


def apply_scenario(inp: TickInputs, scenario: Scenario, state: SiteTables) -> TickInputs:
    """``inp`` with the scenario's failures added and its overrides applied."""
    sc = scenario.inputs
    inp.failed_power = np.union1d(inp.failed_power, id_array(sc.failed_power))
    inp.failed_sources = np.union1d(inp.failed_sources, id_array(sc.failed_sources))
    inp.failed_links = np.union1d(inp.failed_links, id_array(sc.failed_links))
    if sc.pumps_running_count is not None:
        lost = state.cdu_spec_array("pumps") - np.asarray(sc.pumps_running_count)
        inp.pumps_running_count = np.maximum(inp.pumps_running_count - lost, 0).astype(np.int64)
        inp.coolant_flow_lpm = np.where(lost > 0, np.nan, inp.coolant_flow_lpm)  # the pump model decides the new flow
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
class ReplayOutcome(Report):
    """What the replayed site went through, over every tick."""

    max_gpu_temp_c: float  # hottest die of any tick
    max_gpus_throttled: int  # most GPUs throttled at once
    max_gpus_down: int  # most GPUs down at once


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
    outcome: ReplayOutcome | None = None
    n_ticks: int = 0  # twin ticks after the settled start (every GPU of the site ticked each time)
    tick_s: float = TICK_S
    n_workers: int = 1  # processes that ticked the site's shards
    skipped: RemapReport | None = None  # a layout scenario: what of the recording did not carry over

    @property
    def speed_x(self) -> float:
        return self.duration_s / self.wall_s if self.wall_s > 0 else float("inf")

    @property
    def gpu_ticks_per_s(self) -> float:
        return self.gpus * self.n_ticks / self.wall_s if self.wall_s > 0 else float("inf")

    def as_dict(self) -> dict:
        return {
            "incident": self.incident,
            "frames": self.frames,
            "duration_s": self.duration_s,
            "wall_s": self.wall_s,
            "speed_x": self.speed_x,
            "gpu_ticks_per_s": self.gpu_ticks_per_s,
            "gpus": self.gpus,
            "n_ticks": self.n_ticks,
            "tick_s": self.tick_s,
            "n_workers": self.n_workers,
            "signals": self.signals,
            "outcome": self.outcome.as_dict() if self.outcome is not None else {},
            **({"skipped": self.skipped.as_dict()} if self.skipped is not None else {}),
        }


class Replayer:
    """Runs the twin over a recording (see module docstring), in hall shards on several processes when it pays."""

    def __init__(
        self,
        state: SiteTables,
        rec: Recording,
        *,
        scenario: Scenario | None = None,
        job=None,
        tick_s: float = TICK_S,
        workers: int | None = None,
        site_toml: str | None = None,
        engine: type[TwinEngine] = ReplayEngine,
    ) -> None:
        self.state, self.rec, self.scenario, self.engine = state, rec, scenario, engine
        self.job = job  # a PlacedJob whose throughput is projected
        if not tick_s > 0:
            raise ValueError(f"tick_s: must be positive (got {tick_s!r})")
        self.tick_s = tick_s
        self.shards = self._shards(workers, site_toml)

    def _shards(self, workers: int | None, site_toml: str | None) -> list[Shard]:
        n = default_workers(self.state) if workers is None else workers
        # halls are independent only when the recording gives every loop's facility supply
        # (else the shared plant couples them) and no source fails (else the site's
        # shortfall policy, which spans every hall, may act)
        if n < 2 or site_toml is None or not np.isfinite(self.rec.loop_supply_temp_c).all() or self._sources_fail():
            return [Shard.whole(self.state)]
        return cached_shards(self.state, site_toml, n) or [Shard.whole(self.state)]

    def _sources_fail(self) -> bool:
        """Whether a source is failed in any frame or by the scenario."""
        recorded = any(len(id_array(v)) for v in self.rec.site["failed_sources"])
        return recorded or bool(self.scenario is not None and len(id_array(self.scenario.inputs.failed_sources)))

    def n_ticks(self, frames: range | None = None) -> int:
        """Twin ticks a run over ``frames`` makes after its settled start."""
        dt = self.rec.dt_s[np.asarray(frames or range(self.rec.n_frames))[1:]]
        return int(np.maximum(1, np.round(dt / self.tick_s)).sum())

    def _job_result(self, tokens: dict, key) -> float:
        """Job throughput [tokens/s] for one set of slowed GPUs and failed links, evaluated once per distinct set."""
        if key not in tokens:
            throttle = np.ones(self.state.n_gpus)
            ids, clock, links = key[0], key[1], key[2]
            throttle[np.asarray(ids, dtype=np.int64)] = np.asarray(clock) * JOB_CLOCK_STEP_FRAC
            link_up = np.ones(self.state.n_links, dtype=bool)
            link_up[np.asarray(links, dtype=np.int64)] = False
            tokens[key] = evaluate_site_job(
                self.state, self.job.spec, self.job.gpu_ids, throttle, link_up
            ).status.tokens_per_s
        return tokens[key]

    def run(self, frames: range | None = None, speed: float | None = None) -> dict[str, np.ndarray]:
        """Projected series over ``frames`` (default all), paced at ``speed``× real time (None: as fast as possible).

        Returns signal → array [n_frames, n_entities] at the frame instants (row 0 is the settled start).
        """
        s, rec = self.state, self.rec
        frames = frames or range(rec.n_frames)

        def inputs(i: int) -> TickInputs:
            return frame_inputs(rec, s, i, self.scenario)

        job_ids = None if self.job is None else np.asarray(self.job.gpu_ids, dtype=np.int64)
        runs = []
        for shard in self.shards:
            lo, hi = shard.gpus.start, shard.gpus.stop
            detail = rec.gpu_ids[(rec.gpu_ids >= lo) & (rec.gpu_ids < hi)]
            jobs = None if job_ids is None else job_ids[(job_ids >= lo) & (job_ids < hi)]
            runs.append(ShardRun(shard, detail, jobs, self.tick_s, speed, self.engine))
        if len(runs) == 1:
            parts = [run_shard(runs[0], inputs, frames)]
        else:
            parts = run_parallel(runs, inputs, frames)
        return self._combine(runs, parts, frames)

    def _combine(self, runs: list[ShardRun], parts: list[dict], frames: range) -> dict[str, np.ndarray]:
        s, rec, n = self.state, self.rec, len(frames)
        out = {k: np.full((n, rec.gpu_ids.size), np.nan) for k in GPU_SIGNALS}
        out.update({k: np.full((n, s.n_racks), np.nan) for k in RACK_SIGNALS})
        out.update({k: np.full((n, s.n_cdus), np.nan) for k in CDU_SIGNALS})
        for run, part in zip(runs, parts):
            cols = np.searchsorted(rec.gpu_ids, run.detail_gpus)
            for k in GPU_SIGNALS:
                out[k][:, cols] = part[k]
            for k in RACK_SIGNALS:
                out[k][:, run.shard.racks] = part[k]
            for k in CDU_SIGNALS:
                out[k][:, run.shard.cdus] = part[k]
        for k in SUMMED:
            out[k] = sum(part[k] for part in parts)[:, None]
        out["max_gpu_temp_c"] = np.max([part["max_gpu_temp_c"] for part in parts], axis=0)[:, None]
        for k in ("tick_gpus_throttled", "tick_gpus_down"):
            out[k] = sum(part[k] for part in parts)
        out["tick_max_gpu_temp_c"] = np.max([part["tick_max_gpu_temp_c"] for part in parts], axis=0)
        out["job_tokens_per_s"] = np.full((n, 1), np.nan)
        if self.job is not None:
            tokens: dict = {}
            for row, i in enumerate(frames):
                ids = np.concatenate([part["job_slow"][row][0] for part in parts])
                clock = np.concatenate([part["job_slow"][row][1] for part in parts])
                steps = np.floor(clock / JOB_CLOCK_STEP_FRAC).astype(np.int64)
                links = tuple(id_array(rec.site_rows[i]["failed_links"]).tolist())
                if self.scenario is not None:
                    links = tuple(np.union1d(links, id_array(self.scenario.inputs.failed_links)).tolist())
                key = (tuple(ids.tolist()), tuple(steps.tolist()), links)
                out["job_tokens_per_s"][row, 0] = self._job_result(tokens, key)
        return out

    def recorded(self, frames: range | None = None) -> dict[str, np.ndarray]:
        """The recorded series matching :meth:`run`'s signals."""
        rec = self.rec
        idx = np.asarray(frames or range(rec.n_frames))
        it = rec.site["it_power_mw"].to_numpy(dtype=np.float64)[idx, None]
        return {
            "gpu_temp_c": rec.gpu["gpu_temp_c"][idx],
            "hbm_temp_c": rec.gpu["hbm_temp_c"][idx],
            "gpu_power_w": rec.gpu["gpu_power_w"][idx],
            "rack_max_gpu_temp_c": rec.rack["rack_max_gpu_temp_c"][idx],
            "rack_mean_gpu_power_w": rec.rack["rack_mean_gpu_power_w"][idx],
            "rack_power_kw": rec.rack["rack_power_kw"][idx],
            "coolant_supply_temp_c": rec.cdu["coolant_supply_temp_c"][idx],
            "coolant_return_temp_c": rec.cdu["coolant_return_temp_c"][idx],
            "it_power_mw": it,
            "job_tokens_per_s": rec.site["job_tokens_per_s"].to_numpy(dtype=np.float64)[idx, None],
        }


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


def replay(
    bundle: Bundle,
    state: SiteTables,
    *,
    speed: float | None = None,
    scenario: Scenario | None = None,
    rec: Recording | None = None,
    tick_s: float = TICK_S,
    workers: int | None = None,
    site_toml: str | None = None,
) -> ReplayResult:
    """Replay ``bundle`` on ``state`` (see module docstring); ``workers`` None picks :func:`default_workers`.

    ``site_toml`` is the text ``state`` was built from (default the bundle's site file): the
    hall shards are cut from it.  A scenario with layout edits replays on its edited site
    (:attr:`Scenario.state`), the recording carried over by entity name
    (:mod:`ingest.replay.remap`), in one process.
    """
    rec = rec or load_recording(bundle, state)
    skipped = None
    if scenario is not None and scenario.state is not None:
        rec, report = remap_recording(rec, state, scenario.state)
        state, site_toml, skipped = scenario.state, None, report
        job = recorded_job(state, rec)
        if job is not None:
            rec = power_on_job_nodes(rec, state, job.gpu_ids)
    else:
        site_toml = site_toml or bundle.site_toml
        job = recorded_job(state, rec)
    player = Replayer(state, rec, scenario=scenario, job=job, tick_s=tick_s, workers=workers, site_toml=site_toml)
    t0 = time.perf_counter()
    projected = player.run(speed=speed)
    wall = time.perf_counter() - t0
    recorded = player.recorded()
    outcome = ReplayOutcome(
        max_gpu_temp_c=float(np.nanmax(projected["tick_max_gpu_temp_c"])),
        max_gpus_throttled=int(projected["tick_gpus_throttled"].max()),
        max_gpus_down=int(projected["tick_gpus_down"].max()),
    )
    return ReplayResult(
        bundle.name,
        rec.n_frames,
        rec.duration_s,
        wall,
        state.n_gpus,
        score(recorded, projected),
        {k: (recorded[k], projected[k]) for k in recorded},
        outcome,
        n_ticks=player.n_ticks(),
        tick_s=tick_s,
        n_workers=len(player.shards),
        skipped=skipped,
    )
