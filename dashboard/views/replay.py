"""The replay view: a recorded incident at one instant (``replay:<incident>@<iso-time>``).

The instant shown is the recorded frame nearest the time asked for.  Its :class:`Snapshot`
is rebuilt from the bundle's tables pivoted by :func:`ingest.replay.replay.load_recording`:
GPUs the bundle keeps in detail carry their own readings, every other GPU its rack's
means (temperature, power, utilisation, throttling), and the first ``rack_gpus_down_total``
GPUs of such a rack are shown down (the bundle does not say which).  Generation capacity
is the capacity of the sources not reported failed (batteries with charge), as the
engine computes it; values no table keeps (time to throttle, N-1 load, link
utilisation, the training swing) are NaN: unknown.
The recorded job (the site's default job, when the recording reports its throughput) is
placed as the live hub places it; its status at the instant is the twin's evaluation of
the recorded throttling and failed links (bottlenecks, breakdown, checkpointing) with
the recorded step time and throughput, MFU and goodput scaled to the recorded throughput
(work lost to failures is not recorded: unknown);
:meth:`ReplayView.job_record` gives both the recorded and the twin's figures.
An alert is open in a replay from its opening to its clearing (the recorder's ``CLEARED``
event of the same entity and metric): at an instant the alerts are the episodes opened at or
before it and not cleared by then, the latest per entity and metric; the cleared ones are the
replay's past alerts (``cleared_at`` set).  Bundles written before clearings were logged hold
openings only: there an alert stays open until the same alert opens again.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from ingest.replay.bundle import CLEARED, Bundle, BundleError, read_bundle
from ingest.replay.hits import JobHit, jobs_hit
from ingest.replay.library import find_incident, list_incidents, validate
from ingest.replay.replay import Recording, load_recording, recorded_job
from ingest.store.layouts import CDU_FIELDS
from twin.cache import BoundedCache
from twin.engine.balance import generation_capacity_mw
from twin.engine.jobs import snapshot_swing
from twin.engine.snapshot import GPU_DOWN, GPU_OFF, GPU_OK, GPU_THROTTLED, JobStatus, Snapshot
from twin.engine.view import REPLAY, ViewKey, ViewTick, format_view_key
from twin.site.tables import SiteTables
from twin.training.sitejob import evaluate_site_job

THROTTLED_BELOW_FRAC = 0.99  # throttle_frac 1 = full clocks; below this a GPU counts as throttled
SNAPSHOT_CACHE_SIZE = 64


class ReplayError(ValueError):
    """An incident that cannot be replayed (the message says why, for the page)."""


def _nearest(times: np.ndarray, at: datetime) -> int:
    """Index of the frame nearest ``at`` (seconds since the epoch in ``times``)."""
    return int(np.argmin(np.abs(times - at.timestamp())))


class IncidentRecording:
    """A loaded incident: its bundle, site, pivoted recording and snapshots per frame (bounded LRU)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.bundle: Bundle = read_bundle(path)
        self.state: SiteTables = validate(self.bundle)
        self.rec: Recording = load_recording(self.bundle, self.state)
        self.times_s = np.array([t.timestamp() for t in self.rec.ts])
        self.events = self.bundle.frame("events").sort_values("ts", kind="stable").reset_index(drop=True)
        self.episodes = alert_episodes(self.events)
        self.gpu_frame = self.bundle.frame("gpu")
        self.cdu_frame = self.bundle.frame("cdu")
        # frame index → (its snapshot, the twin's job status on it or None)
        self._frames: BoundedCache[tuple[Snapshot, JobStatus | None]] = BoundedCache(SNAPSHOT_CACHE_SIZE)
        # (slowed job GPUs' running fractions, their indices, failed links) → the twin's job status
        self._job_statuses: BoundedCache[tuple[JobStatus, object]] = BoundedCache(
            SNAPSHOT_CACHE_SIZE
        )  # with its result
        self.job = recorded_job(self.state, self.rec)  # PlacedJob or None

    @property
    def name(self) -> str:
        return self.bundle.name

    @functools.cached_property
    def hits(self) -> list[JobHit]:
        """The jobs the incident hit, earliest first (:func:`ingest.replay.hits.jobs_hit`), computed once."""
        return jobs_hit(self.bundle, self.state, self.rec)

    def frame_index(self, at: datetime) -> int:
        return _nearest(self.times_s, at)

    def event_times(self) -> list[datetime]:
        """The instants alerts opened (clearings are not events to jump to), oldest first."""
        return sorted({t.to_pydatetime() for t in self.episodes["ts"]})

    def snapshot(self, i: int) -> Snapshot:
        return self._frames.get_or_make(i, lambda: self._frame(i))[0]

    def _frame(self, i: int) -> tuple[Snapshot, JobStatus | None]:
        snap = self._build_snapshot(i)
        pair = self._twin_job(i, snap)
        if pair is None:
            return snap, None
        twin, result = pair
        snap.jobs = [self._recorded_status(i, twin)]
        # the recorded job's phases make the swing (its SiteJobResult holds the step's shape)
        sw = snapshot_swing(self.state, snap, [self.job], [result])
        snap.swing_amplitude_mw, snap.swing_ramp_mw_per_s = sw.amplitude_mw, sw.ramp_mw_per_s
        return snap, twin

    def twin_job(self, i: int) -> JobStatus | None:
        """The twin's status of the recorded job at frame ``i`` (None without a recorded job)."""
        return self._frames.get_or_make(i, lambda: self._frame(i))[1]

    def _twin_job(self, i: int, snap: Snapshot) -> tuple[JobStatus, object] | None:
        """The twin's job status on the frame's throttling and links, evaluated once per distinct pair."""
        if self.job is None:
            return None
        running = np.where(snap.gpu_state == GPU_DOWN, 0.0, np.nan_to_num(snap.throttle_frac, nan=1.0))
        slow = np.flatnonzero(running[self.job.gpu_ids] < 1.0)
        key = (running[self.job.gpu_ids][slow].tobytes(), slow.tobytes(), np.flatnonzero(~snap.link_up_flag).tobytes())
        job = self.job

        def make():
            result = evaluate_site_job(self.state, job.spec, job.gpu_ids, running, snap.link_up_flag)
            return result.status, result

        return self._job_statuses.get_or_make(key, make)

    def _recorded_status(self, i: int, twin: JobStatus) -> JobStatus:
        """``twin`` with the recorded step time and throughput (MFU and goodput scaled to it)."""
        row = self.rec.site_rows[i]
        tokens, step = float(row["job_tokens_per_s"]), float(row.get("job_step_time_s", math.nan))
        twin = dataclasses.replace(twin, lost_work_s=math.nan, lost_tokens_count=math.nan)  # not recorded
        if not math.isfinite(tokens):
            return twin
        scale = tokens / twin.tokens_per_s if twin.tokens_per_s > 0 else (1.0 if tokens == 0 else math.nan)
        return dataclasses.replace(
            twin,
            tokens_per_s=tokens,
            step_time_s=step if math.isfinite(step) else twin.step_time_s,
            mfu_frac=twin.mfu_frac * scale if math.isfinite(scale) else math.nan,
            gpu_model_tflops=twin.gpu_model_tflops * scale if math.isfinite(scale) else math.nan,
            goodput_tokens_per_s=twin.goodput_tokens_per_s * scale if math.isfinite(scale) else math.nan,
        )

    def _build_snapshot(self, i: int) -> Snapshot:
        s, rec = self.state, self.rec
        rack, cdu, row = rec.rack, rec.cdu, rec.site_rows[i]
        by_rack = lambda name: rack[name][i][s.gpu_rack].astype(np.float64)  # noqa: E731
        temp, power = by_rack("rack_mean_gpu_temp_c"), by_rack("rack_mean_gpu_power_w")
        util, throttle = by_rack("rack_mean_util_frac"), by_rack("rack_mean_throttle_frac")
        hbm = np.full(s.n_gpus, np.nan)
        clock = np.full(s.n_gpus, np.nan)
        xid = np.zeros(s.n_gpus, dtype=np.int16)
        state = np.where(throttle < THROTTLED_BELOW_FRAC, GPU_THROTTLED, GPU_OK).astype(np.int8)
        down_total = np.nan_to_num(rack["rack_gpus_down_total"][i]).astype(np.int64)
        first = np.searchsorted(s.gpu_rack, np.arange(s.n_racks))  # GPUs of a rack are contiguous
        rank = np.arange(s.n_gpus) - first[s.gpu_rack]
        state[rank < down_total[s.gpu_rack]] = GPU_DOWN
        ids = rec.gpu_ids
        if ids.size:
            g = {k: v[i] for k, v in rec.gpu.items()}
            temp[ids], power[ids], util[ids], throttle[ids] = (
                g["gpu_temp_c"],
                g["gpu_power_w"],
                g["gpu_util_frac"],
                g["throttle_frac"],
            )
            hbm[ids], clock[ids] = g["hbm_temp_c"], g["sm_clock_mhz"]
            xid[ids] = np.nan_to_num(g["last_xid_code"]).astype(np.int16)
            state[ids] = np.where(
                ~(g["gpu_power_w"] > 0),
                GPU_DOWN,
                np.where(g["throttle_frac"] < THROTTLED_BELOW_FRAC, GPU_THROTTLED, GPU_OK),
            )
        nodes_off = np.asarray(row["nodes_off"] if row["nodes_off"] is not None else [], dtype=np.int64)
        if nodes_off.size:
            state[np.isin(s.gpu_node, nodes_off)] = GPU_OFF
        links_up = np.ones(s.link_a.size, dtype=bool)
        failed_links = np.asarray(row["failed_links"] if row["failed_links"] is not None else [], dtype=np.int64)
        links_up[failed_links] = False
        frame = lambda table, col, n: _entity_values(self.bundle, table, col, rec.ts[i], n)  # noqa: E731
        n_power, n_sources, n_loops = s.n_power, s.n_sources, len(s.loop_name)
        nan = lambda n: np.full(n, np.nan)  # noqa: E731
        it, facility = float(row["it_power_mw"]), float(row["facility_power_mw"])
        source_live = np.ones(n_sources, dtype=bool)
        source_live[np.asarray(row["failed_sources"] if row["failed_sources"] is not None else [], dtype=np.int64)] = (
            False
        )
        soc = frame("source", "battery_soc_frac", n_sources)
        capacity_mw, _ = generation_capacity_mw(s.source_kind, s.source_capacity_mw, source_live, soc)
        return Snapshot(
            ts=rec.ts[i],
            gpu_temp_c=temp,
            hbm_temp_c=hbm,
            gpu_power_w=power,
            gpu_util_frac=util,
            sm_clock_mhz=clock,
            throttle_frac=throttle,
            gpu_state=state,
            last_xid_code=xid,
            rack_power_kw=rack["rack_power_kw"][i].astype(np.float64),
            rack_max_gpu_temp_c=rack["rack_max_gpu_temp_c"][i].astype(np.float64),
            rack_time_to_throttle_s=nan(s.n_racks),
            coolant_supply_temp_c=cdu["coolant_supply_temp_c"][i],
            coolant_return_temp_c=cdu["coolant_return_temp_c"][i],
            coolant_flow_lpm=cdu["coolant_flow_lpm"][i],
            cdu_heat_kw=cdu["cdu_heat_kw"][i],
            cdu_capacity_kw=cdu["cdu_capacity_kw"][i],
            pumps_running_count=np.nan_to_num(cdu["pumps_running_count"][i]).astype(np.int8),
            loop_supply_temp_c=rec.loop_supply_temp_c[i].astype(np.float64),
            loop_return_temp_c=frame("loop", "loop_return_temp_c", n_loops),
            loop_heat_kw=nan(n_loops),
            feed_power_kw=frame("power", "feed_power_kw", n_power),
            load_frac=frame("power", "load_frac", n_power),
            power_n1_load_frac=nan(n_power),
            source_power_mw=frame("source", "source_power_mw", n_sources),
            battery_soc_frac=soc,
            link_up_flag=links_up,
            link_util_frac=nan(s.link_a.size),
            it_power_mw=it,
            cooling_power_mw=facility - it,
            facility_power_mw=facility,
            generation_capacity_mw=capacity_mw,
            pue_ratio=float(row["pue_ratio"]),
            outdoor_wet_bulb_c=float(row["outdoor_wet_bulb_c"]),
            outdoor_dry_bulb_c=float(row["outdoor_dry_bulb_c"]),
            swing_amplitude_mw=float("nan"),
            swing_ramp_mw_per_s=float("nan"),
        )

    def open_events(self, at: datetime) -> pd.DataFrame:
        """The openings of the alerts open at ``at`` (see :func:`open_at`), newest first."""
        return open_at(self.episodes, at)

    def cleared_events(self, at: datetime) -> pd.DataFrame:
        """The openings of the alerts that opened and cleared by ``at`` (with ``cleared_ts``), newest first."""
        ep = self.episodes
        return ep[ep["cleared_ts"].notna() & (ep["cleared_ts"] <= pd.Timestamp(at))].iloc[::-1]


def open_at(episodes: pd.DataFrame, at: datetime) -> pd.DataFrame:
    """Of :func:`alert_episodes`, the alerts open at ``at``: opened at or before it and not cleared by then,
    the latest per (entity kind, entity id, metric), newest first."""
    ep = episodes[episodes["ts"] <= pd.Timestamp(at)]
    ep = ep[ep["cleared_ts"].isna() | (ep["cleared_ts"] > pd.Timestamp(at))]
    return ep.drop_duplicates(EPISODE_KEY, keep="last").iloc[::-1]


EPISODE_KEY = ["entity_kind", "entity_id", "metric"]


def alert_episodes(events: pd.DataFrame) -> pd.DataFrame:
    """The openings of ``events`` (sorted by time), each with ``cleared_ts``: its clearing's time, NaT while open.

    An opening is cleared by the next ``CLEARED`` row of the same entity kind, id and metric;
    a clearing without an opening before it (the window began while the alert was open) is dropped.
    """
    cleared_ts = pd.Series(pd.NaT, index=events.index, dtype=events["ts"].dtype)
    is_clear = events["severity"] == CLEARED
    for _, rows in events.groupby(EPISODE_KEY, sort=False):
        pending: list = []  # openings of this alert not cleared yet
        for idx, clear, ts in zip(rows.index, is_clear[rows.index], rows["ts"], strict=True):
            if not clear:
                pending.append(idx)
            elif pending:
                cleared_ts[pending] = ts
                pending = []
    return events[~is_clear].assign(cleared_ts=cleared_ts[~is_clear])


# (id of a bundle, table) → (the bundle, its table indexed by time); the bundle is held, so its id is checked
_tables: BoundedCache[tuple[Bundle, pd.DataFrame]] = BoundedCache(32)


def _entity_values(bundle: Bundle, table: str, column: str, ts: datetime, n: int) -> np.ndarray:
    """One column of a per-entity table at ``ts`` on dense ids (NaN where the table has no row)."""
    _held, frame = _tables.get_or_make(
        (id(bundle), table),
        lambda: (bundle, bundle.frame(table).set_index("ts").sort_index()),
        valid=lambda hit: hit[0] is bundle,
    )
    out = np.full(n, np.nan)
    rows = frame.loc[frame.index == pd.Timestamp(ts)]
    id_col = f"{table}_id"
    out[rows[id_col].to_numpy()] = rows[column].to_numpy(dtype=np.float64)
    return out


def _event_alert(e, site_name: str) -> dict:
    """One recorded alert episode in the shape of :func:`ingest.live.alerts.alert_dict` (read-only)."""
    ts = e.ts.to_pydatetime().astimezone(UTC)
    key = f"{e.entity_kind}:{e.entity_id}:{e.metric}"
    cleared = None if pd.isna(e.cleared_ts) else e.cleared_ts.to_pydatetime().astimezone(UTC)
    return {
        "id": f"{key}@{ts:%Y-%m-%dT%H:%M:%SZ}",
        "site": site_name,
        "key": key,
        "ts": ts,
        "raised_at": ts,
        "updated_at": cleared or ts,
        "severity": e.severity,
        "source": e.source,
        "entity_kind": e.entity_kind,
        "entity_id": int(e.entity_id),
        "entity_name": e.entity_name,
        "metric": e.metric,
        "value": float(e.value),
        "message": e.message,
        "group": key,
        "impact": {"gpus": 0, "jobs": [], "tokens_per_s": 0.0, "power_mw": 0.0},
        "runbook": "",
        "acknowledged": False,
        "acknowledged_at": None,
        "ack_comment": "",
        "acknowledged_by": "",
        "silenced_until": None,
        "cleared_at": cleared,
    }


class ReplayView:
    """A recorded incident at the frame nearest one instant (see module docstring)."""

    is_live = False

    def __init__(self, incident: IncidentRecording, at: datetime) -> None:
        self.incident = incident
        self.state, self.site_name = incident.state, incident.state.name
        self.index = incident.frame_index(at)
        self.at = incident.rec.ts[self.index]
        self.key = format_view_key(ViewKey(REPLAY, incident.name, self.at))
        self.title = incident.bundle.metadata["title"]
        self.label = f"replay · {incident.name}"
        self._tick = ViewTick(incident.snapshot(self.index), None)

    def latest_tick(self) -> ViewTick:
        return self._tick

    def latest(self) -> Snapshot | None:
        return self._tick.snapshot

    def trend(self, window_s: float = 900.0) -> pd.DataFrame:
        """The recorded site scalars up to the instant (GPU counts and job MFU are not recorded: NaN)."""
        from ingest.live.trend import TREND_COLUMNS

        site = self.incident.rec.site.iloc[: self.index + 1]
        site = site[site["ts"] >= pd.Timestamp(self.at) - pd.Timedelta(seconds=window_s)]
        out = pd.DataFrame(index=pd.DatetimeIndex(site["ts"], name="ts"), columns=list(TREND_COLUMNS), dtype=float)
        for col, src in (
            ("it_power_mw", "it_power_mw"),
            ("facility_power_mw", "facility_power_mw"),
            ("pue_ratio", "pue_ratio"),
            ("tokens_per_s", "job_tokens_per_s"),
        ):
            out[col] = site[src].to_numpy(dtype=np.float64)
        rack = self.incident.rec.rack
        sl = slice(self.index + 1 - len(site), self.index + 1)
        out["max_gpu_temp_c"] = np.nanmax(rack["rack_max_gpu_temp_c"][sl], axis=1) if len(site) else []
        out["gpus_down"] = np.nansum(rack["rack_gpus_down_total"][sl], axis=1) if len(site) else []
        return out

    def alerts(self, active_only: bool = True) -> list[dict]:
        """The alerts open at the instant, newest first; with ``active_only`` False then those cleared by it."""
        rows = [self.incident.open_events(self.at)]
        if not active_only:
            rows.append(self.incident.cleared_events(self.at))
        out = []
        for frame in rows:
            for e in frame.itertuples():
                alert = _event_alert(e, self.site_name)
                if alert["cleared_at"] is not None and alert["cleared_at"] > self.at:
                    alert["cleared_at"] = alert["updated_at"] = None  # open at the instant: its clearing is to come
                out.append(alert)
        return out

    def rack_history(self, rack_id: int, window_s: float = 600.0) -> pd.DataFrame:
        """The recorded GPU values of one rack up to the instant (empty for a rack kept only as aggregates)."""
        if not 0 <= rack_id < self.state.n_racks:
            raise ValueError(f"rack id {rack_id} is not in 0..{self.state.n_racks - 1}")
        g = self.incident.gpu_frame
        gpus = np.flatnonzero(self.state.gpu_rack == rack_id)
        t0 = pd.Timestamp(self.at) - pd.Timedelta(seconds=window_s)
        g = g[g["gpu_id"].isin(gpus) & (g["ts"] >= t0) & (g["ts"] <= pd.Timestamp(self.at))]
        long = g.melt(id_vars=["ts", "gpu_id"], var_name="metric", value_name="value").rename(columns={"gpu_id": "gpu"})
        return long[["ts", "gpu", "metric", "value"]].reset_index(drop=True)

    def cdu_history(self, cdu_id: int, window_s: float = 600.0) -> pd.DataFrame:
        if not 0 <= cdu_id < self.state.n_cdus:
            raise ValueError(f"CDU id {cdu_id} is not in 0..{self.state.n_cdus - 1}")
        c = self.incident.cdu_frame
        t0 = pd.Timestamp(self.at) - pd.Timedelta(seconds=window_s)
        c = c[(c["cdu_id"] == cdu_id) & (c["ts"] >= t0) & (c["ts"] <= pd.Timestamp(self.at))]
        out = c.set_index(pd.DatetimeIndex(c["ts"], name="ts"))
        return out.reindex(columns=list(CDU_FIELDS)).astype(float)

    def placed_jobs(self) -> list:
        return [] if self.incident.job is None else [self.incident.job]

    def job_record(self, job_name: str) -> list[dict]:
        """Recorded against the twin's step time and throughput of ``job_name`` at the instant ([] if unknown)."""
        recorded = next((j for j in self.latest().jobs if j.name == job_name), None)
        twin = self.incident.twin_job(self.index)
        if recorded is None or twin is None or twin.name != job_name:
            return []
        return [
            {"quantity": "step time", "unit": "s", "recorded": recorded.step_time_s, "twin": twin.step_time_s},
            {
                "quantity": "throughput",
                "unit": "tokens/s",
                "recorded": recorded.tokens_per_s,
                "twin": twin.tokens_per_s,
            },
        ]

    def job_timeline(self, job_name: str) -> list[dict]:
        return []

    def source_ages(self) -> dict[str, float]:
        return {}


# (incident file, its modification time) → the loaded recording, loaded one at a time (a bundle is large)
_recordings: BoundedCache[IncidentRecording] = BoundedCache(8, single_flight=True)


def incident_recording(name: str, directory: Path | None = None) -> IncidentRecording:
    """The loaded incident ``name`` (user's library, then shipped), cached per (path, modification time)."""
    try:
        path = find_incident(name, directory)
    except KeyError:
        known = ", ".join(e.name for e in list_incidents(directory)) or "none"
        raise ReplayError(f"no such incident {name!r} (incidents: {known})") from None
    try:
        return _recordings.get_or_make((str(path), path.stat().st_mtime_ns), lambda: IncidentRecording(path))
    except BundleError as exc:
        raise ReplayError(f"incident {name!r} cannot be replayed: {exc}") from None


def replay_view(name: str, at: datetime, directory: Path | None = None) -> ReplayView:
    """The :class:`ReplayView` of incident ``name`` at the recorded frame nearest ``at``."""
    return ReplayView(incident_recording(name, directory), at)
