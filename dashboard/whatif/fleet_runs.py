"""The fleet what-if behind ``/fleet-whatif``: the question a form asks, and the worker thread answering it.

:class:`Question` is one fleet what-if (site, workload, horizon, seed, a flat tariff and grid
intensity, the :class:`twin.fleet.edit_whatif.FleetEdit`); :data:`WORKER` answers one question
at a time per process in a background thread (:class:`Worker`), keeping the answers, the
baseline sides, the workloads and the converted sites in bounded caches, so that a second
question on one baseline costs one side.  Baseline sides run in side processes
(:data:`SIDE_PROCESSES`, spawned once per worker): beside the worker thread's scenario side when
a question needs both, and ahead of any question when the page's workload inputs are known
(:meth:`Worker.warm`), so that the operator's first question costs the scenario side only.  The
workload is the live LLM-lab mix (:func:`ingest.live.fleet.live_workload`) over the horizon, at
the live rate or at an interactive one (at most :data:`INTERACTIVE_JOBS_PER_DAY` jobs a day on
the site).
"""

from __future__ import annotations

import concurrent.futures as cf
import fnmatch
import hashlib
import logging
import math
import multiprocessing
import multiprocessing.connection
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ingest.live.fleet import LIVE_MIX, live_workload
from ingest.workload import run as wrun
from twin.cache import BoundedCache
from twin.errors import InputError
from twin.fleet.edit_whatif import (
    FleetEdit,
    Maintenance,
    QuotaChange,
    check_edit,
    check_horizon,
    compare_sides,
    run_side,
    scenario_inputs,
)
from twin.fleet.metrics import HourlySeries
from twin.fleet.policy import DemandResponse, Policy
from twin.fleet.simulate import SimOptions
from twin.fleet.whatif import Conversion, WhatIfError, convert_site
from twin.site.catalogue import load_catalogue

log = logging.getLogger(__name__)
INTERACTIVE_JOBS_PER_DAY = 2_500  # the default workload's arrival rate at most (the site's jobs a day)
COLOSSUS_GPUS = 100_352  # the live mix's rate is given for colossus and scaled by GPUs (LiveMix.scaled)
DEFAULT_CONVERT_TYPE = "GB200-NVL72"
NEW_HALL = "new hall like"  # the form's "by" for adding a hall built like the one named, of the chosen rack type
# processes running baseline sides (spawned, not forked: the server has threads); two, so that a
# baseline computed ahead for inputs since changed does not hold up the one a question needs
SIDE_PROCESSES = 2
CLOSE_JOIN_S = 10.0  # a bound on waiting for a terminated side process to exit [s]
# requests waiting at once for a question's answer (:meth:`Worker.wait`); more return at once, so that
# viewers of a running question cannot take all of the server's request threads
WAITERS = 4


@dataclass(frozen=True)
class Question:
    """One fleet what-if: site, workload, horizon, seed, flat tariff and intensity, and the edit."""

    site: str
    horizon_days: float
    jobs_per_day: float  # the live mix's rate in colossus terms (live_workload scales it to the site)
    pretraining: bool
    seed: int
    tariff_usd_per_mwh: float | None
    carbon_kg_per_mwh: float | None
    edit: FleetEdit

    def baseline_key(self) -> tuple:
        return (
            self.site,
            self.horizon_days,
            self.jobs_per_day,
            self.pretraining,
            self.seed,
            self.tariff_usd_per_mwh,
            self.carbon_kg_per_mwh,
        )

    def token(self) -> str:
        return hashlib.sha256(repr(self).encode()).hexdigest()[:20]

    def options(self) -> SimOptions:
        return SimOptions(
            horizon_s=self.horizon_days * 86_400.0,
            seed=self.seed,
            tariff=HourlySeries(np.array([self.tariff_usd_per_mwh])) if self.tariff_usd_per_mwh is not None else None,
            carbon=HourlySeries(np.array([self.carbon_kg_per_mwh])) if self.carbon_kg_per_mwh is not None else None,
        )


@dataclass
class Run:
    """A question being answered or answered: phase, share simulated, times, the answer or the error."""

    question: Question
    started_s: float = field(default_factory=time.perf_counter)
    phase: str = "queued"
    frac: float = 0.0
    finished_s: float | None = None
    answer: dict[str, Any] | None = None
    error: str | None = None
    done: threading.Event = field(default_factory=threading.Event, repr=False, compare=False)  # set when finished

    def elapsed_s(self) -> float:
        return (self.finished_s or time.perf_counter()) - self.started_s


class Worker:
    """Answers one question at a time in a background thread; caches answers, baselines, workloads, sites.

    A baseline side runs in a side process (:meth:`baseline_future`): ahead of the questions
    (:meth:`warm`), or beside a question's scenario side, which runs in the worker thread.
    """

    def __init__(self, processes: int = SIDE_PROCESSES) -> None:
        self.lock = threading.Lock()
        self.current: Run | None = None
        self.runs: BoundedCache[Run] = BoundedCache(32)  # token → run (finished ones stay for the page to read)
        self.baselines: BoundedCache[dict] = BoundedCache(8)  # baseline key → finished side
        self.workloads: BoundedCache[tuple] = BoundedCache(4, single_flight=True)  # a warm-up and a question
        self.converted: BoundedCache[Any] = BoundedCache(4)
        self.ahead: dict[tuple, cf.Future] = {}  # baseline key → its side under way in a side process
        self.warming: set[tuple] = set()  # baseline keys whose warm-up thread builds the workload
        self.latest_warm: tuple | None = None  # the baseline key of the latest warm-up asked for
        self.asked: set[tuple] = set()  # baseline keys of sides a question waits for (not cancelled)
        self.processes = processes
        self._pool: cf.ProcessPoolExecutor | None = None
        self._waiters = threading.BoundedSemaphore(WAITERS)

    def submit(self, question: Question, state, base_policy: Policy) -> Run:
        """The run of ``question``: a finished or running one, else a new one started now.

        Raises :class:`WhatIfError` when another question is being answered.
        """
        token = question.token()
        with self.lock:
            known = self.runs.get(token)
            if known is not None and known.error is None:
                return known
            busy = self.current
            if busy is not None and busy.finished_s is None:
                raise WhatIfError(
                    f"another fleet what-if has been running for {busy.elapsed_s():.0f} s "
                    "(one at a time): ask again when it is answered"
                )
            run = Run(question)
            self.current = run
            self.runs.put(token, run)
        threading.Thread(target=self._answer, args=(run, state, base_policy), daemon=True, name="fleet-whatif").start()
        return run

    def find(self, token: str | None) -> Run | None:
        return self.runs.get(token) if token else None

    def wait(self, run: Run, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for ``run`` to finish; whether this call waited (not when it has finished,
        nor when :data:`WAITERS` calls already wait).  A waiting thread holds no lock: the question's runs on."""
        if run.done.is_set() or not self._waiters.acquire(blocking=False):
            return False
        try:
            run.done.wait(timeout_s)
            return True
        finally:
            self._waiters.release()

    def warm(self, question: Question, state, base_policy: Policy) -> bool:
        """Start computing ``question``'s baseline side now (its edit is not read), in the background.

        A newer warm-up supersedes the older ones: those not yet started in a side process are
        dropped (the field being typed into passes through values nobody asks about).  Returns False
        when there is nothing to start: the side is kept, under way or being set up.
        """
        key = question.baseline_key()
        with self.lock:
            self.latest_warm = key
            stale = [f for k, f in self.ahead.items() if k != key and k not in self.asked]
        for fut in stale:
            fut.cancel()  # only one still waiting for a side process is cancelled (outside the lock: callbacks)
        with self.lock:
            if self.baselines.get(key) is not None or key in self.ahead or key in self.warming:
                return False
            self.warming.add(key)
        threading.Thread(
            target=self._warm, args=(question, state, base_policy), daemon=True, name="fleet-whatif-warm"
        ).start()
        return True

    def _warm(self, q: Question, state, base_policy: Policy) -> None:
        try:
            jobs, policy, _ = self._workload(q, state, base_policy)
            if self.latest_warm == q.baseline_key():  # not superseded while the workload was built
                self.baseline_future(q, state, jobs, policy)
        except Exception:  # a warm-up is a head start only: the question computes its baseline itself
            log.exception("fleet what-if: the baseline side could not be started ahead")
        finally:
            with self.lock:
                self.warming.discard(q.baseline_key())

    def baseline_future(
        self, q: Question, state, jobs: list, policy: Policy, asked: bool = False
    ) -> tuple[cf.Future, bool]:
        """(the future of ``q``'s baseline side in a side process, whether it was under way before this call).

        When it finishes the side is kept in :attr:`baselines` (a failed one is not kept).  ``asked``:
        a question waits for it, so no warm-up cancels it (the question discards its key from
        :attr:`asked` when answered).
        """
        key = q.baseline_key()
        with self.lock:
            if asked:
                self.asked.add(key)
            known = self.ahead.get(key)
            if known is not None:
                return known, True
            if self._pool is None:
                self._pool = cf.ProcessPoolExecutor(self.processes, mp_context=multiprocessing.get_context("spawn"))
            fut = self._pool.submit(run_side, state, jobs, policy, q.options())
            self.ahead[key] = fut
        fut.add_done_callback(lambda f: self._keep(key, f))  # outside the lock: it may run at once
        return fut, False

    def _keep(self, key: tuple, fut: cf.Future) -> None:
        error = None if fut.cancelled() else fut.exception()
        with self.lock:
            if not fut.cancelled() and error is None:
                self.baselines.put(key, fut.result())
            if self.ahead.get(key) is fut:
                del self.ahead[key]
            if isinstance(error, cf.process.BrokenProcessPool):
                self._pool = None  # a side process died: the next side starts a new pool

    def close(self, now: bool = False) -> None:
        """Stop the side processes: sides not started are dropped, a side under way is waited for, or
        with ``now`` (the server exits) dropped too, its process terminated."""
        with self.lock:
            pool, self._pool = self._pool, None
        if pool is None:
            return
        if not now:
            pool.shutdown(wait=True, cancel_futures=True)
            return
        # the pool's processes (no public handle before Python 3.14's terminate_workers)
        processes = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        # wait on each process's sentinel, not join(): the pool's own thread joins (reaps) them too, and of
        # two threads in waitpid on one child the loser reads "no such child" and sees no exit code
        deadline = time.monotonic() + CLOSE_JOIN_S
        for process in processes:
            multiprocessing.connection.wait([process.sentinel], max(0.0, deadline - time.monotonic()))

    def _answer(self, run: Run, state, base_policy: Policy) -> None:
        q = run.question
        try:
            run.phase = "building the workload"
            jobs, policy, summary = self._workload(q, state, base_policy)
            opts = q.options()
            cat = load_catalogue()
            check_edit(q.edit, state, policy, opts.horizon_s, cat)
            converted = None
            conversion = q.edit.conversion
            if conversion is not None:
                run.phase = "converting the site"
                key = (state.name, conversion)
                converted = self.converted.get_or_make(key, lambda: convert_site(state, conversion, cat))
            base = self.baselines.get(q.baseline_key())
            cached, ahead, beside = base is not None, False, None
            if base is None:
                beside, ahead = self.baseline_future(q, state, jobs, policy, asked=True)
            run.phase, run.frac = "scenario", 0.0
            s_state, s_jobs, s_policy = scenario_inputs(state, jobs, policy, q.edit, converted, cat)
            scen = run_side(s_state, s_jobs, s_policy, opts, progress=lambda f: setattr(run, "frac", f))
            if beside is not None:
                run.phase = "finishing the baseline side"
                try:
                    base = beside.result()
                except (cf.process.BrokenProcessPool, cf.CancelledError):
                    log.warning("fleet what-if: the side process did not finish the baseline side; it runs here")
                    run.phase, run.frac = "baseline", 0.0
                    base = run_side(state, jobs, policy, opts, progress=lambda f: setattr(run, "frac", f))
                    self.baselines.put(q.baseline_key(), base)
            assert base is not None
            answer = compare_sides(base, scen, opts.horizon_s, q.edit)
            answer["workload"] = summary
            answer["baseline_cached"] = cached
            answer["baseline_ahead"] = ahead
            if q.edit.quota is not None:
                before = next((t.nominal_gpus for t in policy.quotas if t.team == q.edit.quota.team), None)
                answer["quota_before_gpus"] = before
            run.answer = answer
            run.phase = "answered"
        except (InputError, ValueError) as exc:
            run.error, run.phase = str(exc), "refused"
        except Exception as exc:  # a worker thread must report, not die silently
            log.exception("fleet what-if failed")
            run.error, run.phase = f"failed: {type(exc).__name__}: {exc}", "failed"
        finally:
            with self.lock:
                self.asked.discard(q.baseline_key())
            run.finished_s = time.perf_counter()
            run.done.set()

    def _workload(self, q: Question, state, base_policy: Policy) -> tuple:
        def make() -> tuple:
            mix = replace(
                LIVE_MIX,
                days=q.horizon_days,
                jobs_per_day=q.jobs_per_day,
                seed=q.seed,
                n_pretrain=LIVE_MIX.n_pretrain if q.pretraining else 0,
            )
            wl = live_workload(state, mix)
            policy = wrun.build_policy(base_policy, wl, None, state)
            jobs = wl.result.jobs
            site_rate = q.jobs_per_day * state.n_gpus / COLOSSUS_GPUS
            summary = f"{len(jobs):,} jobs of the live LLM-lab mix ({site_rate:,.0f} a day" + (
                ", with its pretraining runs)" if q.pretraining else ", no pretraining runs)"
            )
            return jobs, policy, summary

        return self.workloads.get_or_make(q.baseline_key(), make)


WORKER = Worker()


# ------------------------------------------------------------------ the form → a question
def interactive_jobs_per_day(n_gpus: int) -> float:
    """The live mix's rate (colossus terms) that gives the site at most :data:`INTERACTIVE_JOBS_PER_DAY` jobs a day."""
    site_rate = LIVE_MIX.jobs_per_day * n_gpus / COLOSSUS_GPUS
    return LIVE_MIX.jobs_per_day * min(1.0, INTERACTIVE_JOBS_PER_DAY / max(site_rate, 1e-9))


def _number(value, what: str, low: float | None = None) -> float | None:
    if value in (None, ""):
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise WhatIfError(f"{what} must be a number, got {value!r}") from None
    if not math.isfinite(v) or (low is not None and v < low):
        raise WhatIfError(f"{what} must be a number of at least {low:g}" if low is not None else f"{what}: bad number")
    return v


def _names(text) -> tuple[str, ...]:
    return tuple(n.strip() for n in str(text or "").replace(";", ",").split(",") if n.strip())


def question_from_form(state, values: dict) -> Question:
    """The question the form asks (``values`` by field: horizon, rate, pretrain, seed, convert-by …) (raises :class:`WhatIfError` with a one-line message naming the field)."""
    days = _number(values.get("horizon"), "horizon (days)")
    if days is None:
        raise WhatIfError("horizon: give 1 to 30 days")
    check_horizon(days * 86_400.0)
    conversion = None
    names = _names(values.get("convert-names"))
    if names:
        rack_type = values.get("convert-type") or DEFAULT_CONVERT_TYPE
        by = values.get("convert-by") or "halls"
        if by == NEW_HALL:
            if len(names) != 1 or names[0] not in state.hall_name:
                raise WhatIfError(f"new hall: name the one hall to build it like ({', '.join(state.hall_name)})")
            conversion = Conversion(rack_type, add_hall_like=names[0])
        elif by == "halls":
            conversion = Conversion(rack_type, halls=names)
        else:
            conversion = Conversion(rack_type, rows=names)
        if by == "rows":
            rows = {r.rsplit("-", 1)[0] for r in state.rack_name}
            unknown = [n for n in names if not any(fnmatch.fnmatchcase(r, n) for r in rows)]
            if unknown:
                raise WhatIfError(f"conversion: unknown row {unknown[0]!r} (rows are named like H1-R01)")
    quota = None
    gpus = _number(values.get("quota-gpus"), "quota (GPUs)", 0)
    if values.get("quota-team") and gpus is not None:
        quota = QuotaChange(str(values["quota-team"]), int(round(gpus)))
    elif gpus is not None:
        raise WhatIfError("quota: choose the team")
    dr = None
    cut = _number(values.get("dr-cut"), "demand response cut (MW)", 0)
    if cut:
        start = _number(values.get("dr-start"), "demand response start (h)", 0) or 0.0
        hours = _number(values.get("dr-hours"), "demand response duration (h)", 0) or 0.0
        dr = DemandResponse(start_s=start * 3600.0, duration_s=hours * 3600.0, cut_mw=cut)
    maintenance = None
    halls = tuple(values.get("maint-halls") or ())
    if halls:
        start = _number(values.get("maint-start"), "maintenance start (h)", 0) or 0.0
        hours = _number(values.get("maint-hours"), "maintenance duration (h)", 0) or 0.0
        maintenance = Maintenance(halls, start * 3600.0, hours * 3600.0)
    edit = FleetEdit(
        conversion=conversion,
        retarget_kinds=tuple(values.get("retarget") or ()) if conversion is not None else (),
        grow_quotas=conversion is not None and "on" in (values.get("grow-quotas") or ()),
        ordering=values.get("ordering") or None,
        backfill=values.get("backfill") or None,
        quota=quota,
        demand_response=dr,
        maintenance=maintenance,
    )
    if edit.is_empty():
        raise WhatIfError("the edit changes nothing: choose at least one change")
    return replace(baseline_question_from_form(state, values), edit=edit)


def baseline_question_from_form(state, values: dict) -> Question:
    """The question of the form's workload fields (horizon, rate, pretrain, seed, tariff, carbon) with no edit:
    what :meth:`Worker.warm` needs to compute the baseline side ahead (raises :class:`WhatIfError` as
    :func:`question_from_form`)."""
    days = _number(values.get("horizon"), "horizon (days)")
    if days is None:
        raise WhatIfError("horizon: give 1 to 30 days")
    check_horizon(days * 86_400.0)
    seed = _number(values.get("seed"), "seed", 0)
    rate = LIVE_MIX.jobs_per_day if values.get("rate") == "live" else interactive_jobs_per_day(state.n_gpus)
    return Question(
        site=state.name,
        horizon_days=days,
        jobs_per_day=round(rate, 3),
        pretraining="on" in (values.get("pretrain") or ()),
        seed=int(seed or 0),
        tariff_usd_per_mwh=_number(values.get("tariff"), "tariff (USD/MWh)", 0),
        carbon_kg_per_mwh=_number(values.get("carbon"), "grid intensity (kg/MWh)", 0),
        edit=FleetEdit(),
    )


def base_policy(view) -> Policy:
    """The live fleet's policy when the view has a fleet (its quotas are rebuilt from the workload), else the default."""
    get = getattr(view, "fleet", None)
    fleet = get() if callable(get) else None
    return fleet.sim.run.policy if fleet is not None else Policy()


def team_names(view) -> list[str]:
    get = getattr(view, "fleet", None)
    fleet = get() if callable(get) else None
    if fleet is not None:
        return list(fleet.sim.run.table.team_names)
    return [f"team{i}" for i in range(LIVE_MIX.teams)]  # the generator's names for the live mix's teams
