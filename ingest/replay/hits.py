"""Which jobs and teams a recorded incident hit.

A rack is *hit* from the instant an alert opening names it, or names equipment it depends
on: a rack; a GPU's rack; a CDU's racks; a facility-water loop's racks; a leaf switch's racks
(the GPUs whose NIC is on it); a spine's pod.  A rack is also hit at every frame the
recording shows it impaired beyond its state at the first frame: more GPUs down, or its
GPUs throttled (mean ``throttle_frac`` below :data:`THROTTLED_BELOW_FRAC` and lower than at
the start: a fleet's standing power caps are not the incident's).  Alerts on power elements,
sources or the site name no rack: what they do to racks (a cap) shows as impairment.

The jobs are the bundle's ``jobs`` table (a recording with the live fleet: each job's team,
racks and the frames it ran) or, without one, the site's default job placed as the
recording ran it (team unknown).  A job is hit when a rack holding its GPUs is hit while it
runs; :func:`jobs_hit` gives each such job with the first instant and what hit it,
:func:`teams_hit` the teams they belong to.  Pure numpy over the recording.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from ingest.replay.bundle import CLEARED, Bundle
from ingest.replay.recording import Recording, id_array
from twin.site.tables import TIER_LEAF, TIER_SPINE, SiteTables

THROTTLED_BELOW_FRAC = 0.99  # as the replay view counts a GPU throttled
MAX_CAUSES = 4  # causes named per job


@dataclass(frozen=True)
class RecordedJob:
    """A job of the recording: where it ran (rack ids) and the frames it ran (epoch ms, inclusive)."""

    job_id: str
    team: str  # "" when the recording does not say
    n_gpus: int
    rack_ids: np.ndarray
    first_ms: int
    last_ms: int


@dataclass(frozen=True)
class JobHit:
    """A job the incident hit: when first, on how many of its racks, and by what (alert messages, impairments)."""

    job_id: str
    team: str
    n_gpus: int
    racks_count: int  # racks the job ran on
    racks_hit_count: int
    first_hit: datetime
    causes: tuple[str, ...]


def recorded_jobs(bundle: Bundle, state: SiteTables, rec: Recording) -> list[RecordedJob]:
    """The bundle's jobs table, or the site's default job over the whole recording (none without either)."""
    table = bundle.tables.get("jobs")
    start_ms, end_ms = _ms(rec.ts[0]), _ms(rec.ts[-1])
    if table is not None and table.num_rows:
        jobs = bundle.frame("jobs")
        first, last = _epoch_ms(jobs["first_ts"]), _epoch_ms(jobs["last_ts"])
        return [
            RecordedJob(str(j), str(t), int(n), id_array(r), int(a), int(b))
            for j, t, n, r, a, b in zip(jobs["job_id"], jobs["team"], jobs["n_gpus"], jobs["rack_ids"], first, last)
        ]
    from ingest.replay.replay import recorded_job

    placed = recorded_job(state, rec)
    if placed is None:
        return []
    racks = np.unique(state.gpu_rack[placed.gpu_ids])
    return [RecordedJob(placed.spec.name, "", int(placed.gpu_ids.size), racks, start_ms, end_ms)]


def entity_racks(state: SiteTables, kind: str, entity_id: int) -> np.ndarray:
    """The racks an alert on entity ``kind``/``entity_id`` names (none for power, sources, the site, jobs)."""
    if kind == "rack" and 0 <= entity_id < state.n_racks:
        return np.array([entity_id])
    if kind == "gpu" and 0 <= entity_id < state.n_gpus:
        return np.array([int(state.gpu_rack[entity_id])])
    if kind == "cdu":
        return np.flatnonzero(state.rack_cdu == entity_id)
    if kind == "loop":
        return np.flatnonzero(state.cdu_loop[state.rack_cdu] == entity_id)
    if kind == "switch" and 0 <= entity_id < state.n_switches:
        tier = int(state.switch_tier[entity_id])
        if tier == TIER_LEAF:
            return np.unique(state.gpu_rack[state.gpu_leaf == entity_id])
        if tier == TIER_SPINE:
            return np.unique(state.gpu_rack[state.switch_pod[state.gpu_leaf] == state.switch_pod[entity_id]])
    return np.zeros(0, dtype=np.int64)


def jobs_hit(bundle: Bundle, state: SiteTables, rec: Recording, jobs: list[RecordedJob] | None = None) -> list[JobHit]:
    """The jobs the incident hit, earliest first (see module docstring)."""
    jobs = recorded_jobs(bundle, state, rec) if jobs is None else jobs
    frame_ms = np.array([_ms(t) for t in rec.ts], dtype=np.int64)
    impaired = _impaired(rec)  # what → [frame, rack]
    openings = _openings(bundle, state)
    open_ms = np.array([t for t, _, _, _ in openings], dtype=np.int64)
    named = np.zeros((len(openings), state.n_racks), dtype=bool)  # [opening, rack]: the racks each names
    job_named: dict[str, list[int]] = {}  # job → the openings of its own alerts
    for i, (_, _, racks_named, job_name) in enumerate(openings):
        named[i, racks_named] = True
        if job_name:
            job_named.setdefault(job_name, []).append(i)
    out = []
    for job in jobs:
        racks = np.asarray(job.rack_ids, dtype=np.int64)
        running = (frame_ms >= job.first_ms) & (frame_ms <= job.last_ms)
        hits: list[tuple[int, str]] = []
        hit_racks: set[int] = set()
        during = (open_ms >= job.first_ms) & (open_ms <= job.last_ms)
        on_racks = named[:, racks]
        hit = during & on_racks.any(axis=1)
        hit[[i for i in job_named.get(job.job_id, []) if during[i]]] = True  # the job's own alerts
        for i in np.flatnonzero(hit).tolist():
            hits.append((openings[i][0], openings[i][1]))
        hit_racks.update(racks[on_racks[hit].any(axis=0)].tolist())
        for label, mask in impaired.items():
            sub = mask[np.ix_(running, racks)] if racks.size else np.zeros((int(running.sum()), 0), bool)
            frames = np.flatnonzero(sub.any(axis=1))
            if frames.size:
                hits.append((int(frame_ms[running][frames[0]]), label))
                hit_racks.update(racks[sub.any(axis=0)].tolist())
        if not hits:
            continue
        hits.sort()
        causes = tuple(dict.fromkeys(m for _, m in hits))[:MAX_CAUSES]
        out.append(
            JobHit(
                job.job_id,
                job.team,
                job.n_gpus,
                int(racks.size),
                len(hit_racks),
                datetime.fromtimestamp(hits[0][0] / 1000, UTC),
                causes,
            )
        )
    out.sort(key=lambda h: (h.first_hit, -h.n_gpus, h.job_id))
    return out


def teams_hit(hits: list[JobHit]) -> list[dict]:
    """Per team (``""``: unknown) the jobs hit, their GPUs and the first hit, most GPUs first."""
    teams: dict[str, dict] = {}
    for h in hits:
        t = teams.setdefault(h.team, {"team": h.team, "jobs_count": 0, "gpus_count": 0, "first_hit": h.first_hit})
        t["jobs_count"] += 1
        t["gpus_count"] += h.n_gpus
        t["first_hit"] = min(t["first_hit"], h.first_hit)
    return sorted(teams.values(), key=lambda t: (-t["gpus_count"], t["team"]))


def _openings(bundle: Bundle, state: SiteTables) -> list[tuple[int, str, np.ndarray, str]]:
    """(epoch ms, message, racks named, the job named or "") of every alert opening of the bundle."""
    events = bundle.frame("events")
    if events.empty:
        return []
    events = events[events["severity"] != CLEARED]
    ts_ms = _epoch_ms(events["ts"])
    out = []
    for t, kind, eid, name, message in zip(
        ts_ms, events["entity_kind"], events["entity_id"], events["entity_name"], events["message"]
    ):
        text = message if name and name in message else f"{name}: {message}"
        out.append((int(t), text, entity_racks(state, str(kind), int(eid)), str(name) if kind == "job" else ""))
    return out


def _impaired(rec: Recording) -> dict[str, np.ndarray]:
    """Racks the incident impaired per frame [frame, rack]: more GPUs down, or throttled further, than at the
    recording's first frame (a fleet's power caps or a failure before the window are not the incident's)."""
    down = np.nan_to_num(rec.rack["rack_gpus_down_total"], nan=0.0)
    throttle = np.nan_to_num(rec.rack["rack_mean_throttle_frac"], nan=1.0)
    return {
        "GPUs down": down > down[0],
        "GPUs throttled": (throttle < THROTTLED_BELOW_FRAC) & (throttle < throttle[0] - (1.0 - THROTTLED_BELOW_FRAC)),
    }


def _epoch_ms(times) -> np.ndarray:
    """A column of aware timestamps as epoch milliseconds."""
    return times.dt.as_unit("ms").astype("int64").to_numpy()


def _ms(ts: datetime) -> int:
    return int(round(ts.timestamp() * 1000))
