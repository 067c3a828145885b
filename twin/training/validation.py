"""Validation cases of the throughput and goodput models against published runs.

Each case names its inputs (a job file in ``data/jobs/`` or explicit reliability inputs),
the published figure and its source.  :func:`markdown_tables` regenerates the tables of
``docs/validation.md``; ``tests/twin/training/test_validation.py`` checks the document is current.
Run ``python -m twin.training.validation`` to print them.  What is fitted on which case is in
:mod:`twin.training.fit` (step time) and ``data/catalogue.toml`` (failure rates); every other case
is held out.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from twin.physics import power
from twin.training import goodput, memory
from twin.training.jobfile import TrainingJob, load_gpu_catalogue, load_job
from twin.training.recorded_power import recorded_power
from twin.training.report import throughput_report

JOBS_DIR = Path(__file__).resolve().parents[2] / "data" / "jobs"
# The shared fixtures sit beside the repository (see tests/conftest.py).
MLPERF_POWER_DIR = (
    Path(__file__).resolve().parents[3]
    / "shared"
    / "fixtures"
    / "mlperf-power"
    / "dell-8xXE9680-8xH100-llama2_70b_lora"
)
MLPERF_POWER = (
    "mlcommons/training_results_v4.1, Dell 8xXE9680x8H100-SXM-80GB-POWER, llama2_70b_lora, "
    "power/result_{run} (fixtures mlperf-power)"
)
MEGASCALE = "Jiang et al., NSDI'24, arXiv:2402.15627, abstract (55.2 % MFU; 1.34× Megatron-LM)"
OPT_TPUT = 'Zhang et al., arXiv:2205.01068 §2.4 ("up to 147 TFLOP/s per GPU")'
MEGATRON = "Narayanan et al., SC'21, arXiv:2104.04473, Table 1"
LLAMA = "Dubey et al., arXiv:2407.21783, Table 4"
LLAMA_FAIL = (
    "Dubey et al., arXiv:2407.21783 §3.3.4 (419 unexpected interruptions in 54 days on 16,384 GPUs; as reported by DCD)"
)
LLAMA_ETTR = 'Dubey et al., arXiv:2407.21783 §3.3.4 ("higher than 90% effective training time")'
OPT = "OPT-175B logbook, ~1,000 A100, job MTTI ~7.5 h [Klockwood-JobReliability] [S]"


@dataclass(frozen=True)
class ThroughputCase:
    """A published TFLOP/s-per-GPU figure for a job file."""

    job_file: str
    metric: str  # "gpu_hw_tflops" (counts recomputation) or "gpu_model_tflops" (model FLOPs)
    published: float
    source: str
    role: str = "held out"  # or what was fitted on it (twin/training/fit.py)


FIT_A100 = "fitted: A100 GEMM efficiency"
FIT_H100 = "fitted: H100 GEMM efficiency (with 16K), Llama 3's v (8K → 16K ratio)"
THROUGHPUT_CASES = (
    ThroughputCase("megatron-18b-a100.toml", "gpu_hw_tflops", 135.0, MEGATRON, FIT_A100),
    ThroughputCase("megatron-145b-a100.toml", "gpu_hw_tflops", 148.0, MEGATRON),
    ThroughputCase("megatron-1t-a100.toml", "gpu_hw_tflops", 163.0, MEGATRON),
    ThroughputCase("llama3-405b-8k.toml", "gpu_model_tflops", 430.0, LLAMA, FIT_H100),
    ThroughputCase("llama3-405b-16k.toml", "gpu_model_tflops", 400.0, LLAMA, FIT_H100),
    ThroughputCase("llama3-405b-128k-context.toml", "gpu_model_tflops", 380.0, LLAMA),
    ThroughputCase(
        "megascale-175b-12k.toml",
        "gpu_model_tflops",
        312.0 * 0.552 / 1.34,
        "Megatron-LM on the MegaScale job: 55.2 %/1.34 = 41.2 % MFU [D]; " + MEGASCALE,
    ),
    ThroughputCase(
        "megascale-175b-12k.toml",
        "gpu_model_tflops",
        312.0 * 0.552,
        "MegaScale itself (parallel blocks, sliding-window attention: not modelled); " + MEGASCALE,
    ),
    ThroughputCase("opt-175b-992.toml", "gpu_hw_tflops", 147.0, OPT_TPUT),
)


def _inputs(job: TrainingJob) -> str:
    p = job.parallel
    dims = f"TP{p.tp} CP{p.cp} PP{p.pp} DP{p.dp}" if p.cp > 1 else f"TP{p.tp} PP{p.pp} DP{p.dp}"
    from twin.training.steptime import virtual_stages

    sched = p.schedule if p.pp > 1 else "no PP"
    if p.pp > 1 and p.schedule == "interleaved":
        sched += f" v={virtual_stages(job.model, p)}"
    flash = "flash" if p.flash_attention else "no flash"
    return (
        f"{p.n_gpus:,} {job.gpu.split('-')[0]}, {dims}, {sched}, mb={p.micro_batch}, "
        f"GB={p.global_batch}, s={job.model.seq_len}, recompute={p.recompute}, {flash}, {p.dp_mode}"
    )


def _err(model: float, published: float) -> str:
    return f"{100.0 * (model - published) / published:+.0f} %"


def throughput_rows() -> list[list[str]]:
    """Rows: case, inputs, twin, published, error, source."""
    rows = []
    for case in THROUGHPUT_CASES:
        job = load_job(JOBS_DIR / case.job_file)
        rep = throughput_report(job)
        value = rep[case.metric]
        label = "TFLOP/s/GPU incl. recompute" if case.metric == "gpu_hw_tflops" else "model TFLOP/s/GPU"
        rows.append(
            [
                f"`{case.job_file}`",
                _inputs(job),
                f"{value:.0f} ({label}; MFU {100 * rep['mfu_frac']:.0f} %)",
                f"{case.published:.0f}",
                _err(value, case.published),
                case.role,
                case.source,
            ]
        )
    return rows


def memory_rows() -> list[list[str]]:
    """The memory estimate of every throughput case's layout against its HBM (a check, not a validation)."""
    rows = []
    for file in dict.fromkeys(c.job_file for c in THROUGHPUT_CASES):
        rep = throughput_report(load_job(JOBS_DIR / file))
        hbm = rep["hbm_usable_gb"] / (1.0 - memory.MEMORY_RESERVE_FRAC)
        rows.append(
            [
                f"`{file}`",
                f"{rep['memory_model_states_gb']:.1f}",
                f"{rep['memory_activations_gb']:.1f}",
                f"{rep['memory_logits_gb']:.1f}",
                f"{rep['memory_total_gb']:.1f}",
                f"{hbm:.0f}",
                f"{100 * rep['memory_total_gb'] / hbm:.0f} %",
                "fits" if rep["memory_fits_flag"] else "warning",
            ]
        )
    return rows


def sensitivity_rows() -> list[list[str]]:
    """Llama 3 16K case under each pipeline schedule and DP overlap, which Table 4 does not state (not a validation)."""
    job = load_job(JOBS_DIR / "llama3-405b-16k.toml")
    rows = []
    for schedule, v in (("1f1b", 0), ("interleaved", 2), ("interleaved", 4), ("zero_bubble", 0)):
        for overlap in (0.0, None):
            par = dataclasses.replace(job.parallel, schedule=schedule, virtual_stages=v, dp_overlap_frac=overlap)
            rep = throughput_report(dataclasses.replace(job, parallel=par))
            b = rep["breakdown_s"]
            label = schedule + (f" v={v}" if v else "")
            rows.append(
                [
                    label,
                    "none" if overlap == 0.0 else "derived (FSDP)",
                    f"{rep['gpu_model_tflops']:.0f}",
                    _err(rep["gpu_model_tflops"], 400.0),
                    f"{b['bubble']:.2f}",
                    f"{b['dp_comm']:.2f}",
                    f"{rep['step_time_s']:.2f}",
                ]
            )
    return rows


def _per_day(nodes: int, hw_per_1000_gpu_days: float, fleet_age_days: float = math.inf) -> dict[str, float]:
    """Interruptions per day by cause of a job on ``nodes`` 8-GPU nodes: catalogue-style rates."""
    return goodput.interruptions_per_day_by_cause(
        nodes,
        8.0 * hw_per_1000_gpu_days,
        0.0,
        fleet_age_days,
        software_failures_per_1000_node_days=goodput.DEFAULT_SOFTWARE_FAILURES_PER_1000_NODE_DAYS,
    )


def reliability_rows() -> list[list[str]]:
    """Rows: case, inputs, twin, published, error, source (the catalogue's rates per GPU type)."""
    gpus = load_gpu_catalogue()
    h100, a100 = gpus["H100-SXM5-80GB"].failures_per_1000_gpu_days, gpus["A100-SXM4-80GB"].failures_per_1000_gpu_days
    sw = goodput.DEFAULT_SOFTWARE_FAILURES_PER_1000_NODE_DAYS
    rows = []
    days, nodes = 54.0, 2048
    for label, r in (
        ("Llama 3 405B interruptions (fitted: the H100 rate is this case's)", h100),
        ("same job at the A100 fleet rate (RSC-1)", a100),
    ):
        per_day = _per_day(nodes, r)
        expected = days * sum(per_day.values())
        mttf_h = goodput.mttf_from_rates_s(per_day) / 3600.0
        rows.append(
            [
                label,
                f"{nodes:,} nodes, {days:.0f} days, hardware {8 * r:.2f} + software {sw:.2f} per 1,000 node-days",
                f"{expected:.0f} interruptions (MTTF {mttf_h:.2f} h)",
                "419 (MTTF 3.09 h)",
                _err(expected, 419.0),
                LLAMA_FAIL,
            ]
        )
    rep = throughput_report(load_job(JOBS_DIR / "llama3-405b-16k.toml"))
    rows.append(
        [
            "Llama 3 405B ETTR (held out)",
            f"job file `llama3-405b-16k.toml` (restart {rep['restart_s']:.0f} s from the restart state machine, "
            f"Daly interval {rep['checkpoint_interval_s']:.0f} s, write {rep['checkpoint_write_s']:.1f} s, "
            f"restore {rep['checkpoint_restore_s']:.1f} s; Daly's exact ETTR)",
            f"{100 * rep['ettr_frac']:.1f} %",
            "> 90 %",
            f"{100 * rep['ettr_frac'] - 90:+.1f} points vs the 90 % bound",
            LLAMA_ETTR,
        ]
    )
    opt_nodes = 124
    for label, age, note in (
        ("OPT-175B job MTTI (held out)", math.inf, "mature fleet"),
        (
            "same, new fleet (burn-in at day 0)",
            0.0,
            f"fleet_age_days = 0 (hardware ×{goodput.burn_in_factor(0.0):.1f} [E])",
        ),
    ):
        mttf_h = goodput.mttf_from_rates_s(_per_day(opt_nodes, a100, age)) / 3600.0
        rows.append(
            [
                label,
                f"{opt_nodes} nodes (992 A100), hardware {8 * a100:.2f} + software {sw:.2f} per 1,000 node-days, {note}",
                f"{mttf_h:.1f} h",
                "~7.5 h",
                _err(mttf_h, 7.5),
                OPT,
            ]
        )
    return rows


def ettr_rows() -> list[list[str]]:
    """Daly's exact ETTR against the first-order form on a few jobs (not a validation: the two models' gap)."""
    cases = []
    for file in ("llama3-405b-16k.toml", "colossus-405b-98k.toml"):
        rep = throughput_report(load_job(JOBS_DIR / file))
        cases.append(
            (
                f"`{file}`",
                rep["checkpoint_interval_s"],
                rep["checkpoint_write_s"],
                rep["restart_s"] + rep["checkpoint_restore_s"],
                rep["job_mttf_h"] * 3600.0,
            )
        )
    mttf = 2.0 * goodput.DEFAULT_RESTART_S
    cases.append(("MTTF twice the restart", goodput.daly_interval_s(10.0, mttf), 10.0, goodput.DEFAULT_RESTART_S, mttf))
    rows = []
    for label, tau, write, rst, m in cases:
        exact = goodput.ettr_frac(tau, write, rst, m)
        first = goodput.ettr_first_order_frac(tau, write, rst, m)
        rows.append(
            [
                label,
                f"{m / 3600.0:.2f} h",
                f"{tau:.0f} s",
                f"{write:.1f} s",
                f"{rst:.0f} s",
                f"{100 * first:.1f} %",
                f"{100 * exact:.1f} %",
            ]
        )
    return rows


def power_rows() -> list[list[str]]:
    """Recorded MLPerf node power against the twin's node power for the same job (AC input, W)."""
    from twin.site.catalogue import load_catalogue

    job = load_job(JOBS_DIR / "mlperf-llama2-70b-lora-64.toml")
    rep = throughput_report(job)
    node = next(n for n in load_catalogue().nodes.values() if n.gpu == job.gpu)
    hw = job.hardware
    busy = (rep["avg_gpu_power_w"] - hw.idle_power_w) / (hw.busy_power_w - hw.idle_power_w)

    def node_ac_w(gpu_w: float, util: float) -> float:
        dc = power.node_dc_power_w(
            np.array([node.gpus * gpu_w]), np.array([util]), node.base_power_w, node.idle_base_power_w
        )
        ac, _ = power.node_input_power_w(dc, np.array([node.psus]), node.psu_rating_w)
        return float(ac[0])

    mean_w = node_ac_w(rep["avg_gpu_power_w"], busy)
    peak_w = node_ac_w(min(hw.busy_power_w, hw.limit_w), 1.0)
    rows = []
    for r in (0, 1):
        folder = MLPERF_POWER_DIR / f"result_{r}"
        rec = recorded_power(MLPERF_POWER_DIR / f"result_{r}.txt", sorted(folder.glob("node_*.txt")))
        inputs = (
            f"job file `mlperf-llama2-70b-lora-64.toml`, node type {node.name}; run {r}: "
            f"{rec.nodes} nodes, {rec.duration_s:.0f} s"
        )
        rows.append(
            [
                f"mean node power, run {r}",
                inputs,
                f"{mean_w / 1e3:.2f} kW",
                f"{rec.mean_node_w / 1e3:.2f} kW",
                _err(mean_w, rec.mean_node_w),
                MLPERF_POWER.format(run=r),
            ]
        )
        rows.append(
            [
                f"peak node power, run {r}",
                inputs,
                f"{peak_w / 1e3:.2f} kW",
                f"{rec.peak_node_w / 1e3:.2f} kW",
                _err(peak_w, rec.peak_node_w),
                MLPERF_POWER.format(run=r),
            ]
        )
    return rows


def profile_rows() -> list[list[str]]:
    """The twin's job power profile against the recorded MLPerf node power (see :mod:`twin.training.mlperf_profile`)."""
    from twin.site.catalogue import load_catalogue
    from twin.training import mlperf_profile as mp
    from twin.training import phases, steptime

    job = load_job(JOBS_DIR / "mlperf-llama2-70b-lora-64.toml")
    hw = job.hardware
    step = steptime.step_time(job.model, job.parallel, hw)
    profile = phases.step_profile(step.breakdown_s, step.ops_s["optimizer"], job.parallel.pp)
    node = next(n for n in load_catalogue().nodes.values() if n.gpu == job.gpu)
    model = mp.NodeModel(node.gpus, node.base_power_w, node.idle_base_power_w, node.psus, node.psu_rating_w)
    rows = []
    for r in (0, 1):
        run_log = MLPERF_POWER_DIR / f"result_{r}.txt"
        run = mp.run_phases(run_log)
        rec = mp.recorded_profile(run_log, sorted((MLPERF_POWER_DIR / f"result_{r}").glob("node_*.txt")))
        twin = mp.reduce_profile(
            [mp.twin_node_power_w(profile, run, min(hw.busy_power_w, hw.limit_w), hw.idle_power_w, model)], run
        )
        inputs = (
            f"run {r}: {len(run.blocks_s) - 1} steady blocks and evaluations (run log), node type {node.name}, "
            "1-s samples"
        )
        src = MLPERF_POWER.format(run=r)
        kw: Callable[[float], str] = lambda w: f"{w / 1e3:.2f} kW"  # noqa: E731
        rows += [
            [
                "mean node power in training",
                inputs,
                kw(twin.train_mean_w),
                kw(rec.train_mean_w),
                _err(twin.train_mean_w, rec.train_mean_w),
                src,
            ],
            [
                "node power std in training",
                inputs,
                kw(twin.train_std_w),
                kw(rec.train_std_w),
                _err(twin.train_std_w, rec.train_std_w),
                src,
            ],
            [
                "node power p95 − p5 in training",
                inputs,
                kw(twin.train_p95_p5_w),
                kw(rec.train_p95_p5_w),
                _err(twin.train_p95_p5_w, rec.train_p95_p5_w),
                src,
            ],
            [
                "evaluation dip depth",
                inputs,
                kw(twin.eval_dip_w),
                kw(rec.eval_dip_w),
                _err(twin.eval_dip_w, rec.eval_dip_w),
                src,
            ],
            [
                "evaluation dip duration (below the midpoint)",
                inputs,
                f"{twin.eval_dip_s:.1f} s",
                f"{rec.eval_dip_s:.1f} s",
                _err(twin.eval_dip_s, rec.eval_dip_s),
                src,
            ],
            [
                "step period (the swing's fundamental)",
                f"run {r}: train_loss reports over samples / global batch",
                f"{profile.step_s:.2f} s",
                f"{mp.recorded_step_s(run_log):.2f} s",
                _err(profile.step_s, mp.recorded_step_s(run_log)),
                src,
            ],
        ]
    return rows


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def markdown_tables() -> str:
    """The generated section of ``docs/validation.md``."""
    return "\n\n".join(
        [
            "### Throughput\n\n"
            + _table(
                ["case", "inputs", "twin", "published", "error", "fitted or held out", "source"], throughput_rows()
            ),
            "### GPU memory of the published layouts (the twin's estimate, fullest stage, GB)\n\n"
            + _table(
                ["case", "model states", "activations", "logits", "total", "HBM", "of HBM", "check"],
                memory_rows(),
            ),
            "### Sensitivity of the Llama 3 16K case to unstated inputs (not a validation)\n\n"
            + _table(
                ["schedule", "DP overlap", "model TFLOP/s/GPU", "vs 400", "bubble s", "dp_comm s", "step s"],
                sensitivity_rows(),
            ),
            "### Reliability\n\n"
            + _table(["case", "inputs", "twin", "published", "error", "source"], reliability_rows()),
            "### ETTR: Daly's exact form against the first-order form (not a validation)\n\n"
            + _table(
                ["job", "MTTF", "interval τ", "write δ", "restart + restore R", "first order", "exact (Daly)"],
                ettr_rows(),
            ),
            "### Recorded power\n\n" + _table(["case", "inputs", "twin", "recorded", "error", "source"], power_rows()),
            "### Recorded power profile: level, swing and evaluation dips\n\n"
            + _table(["case", "inputs", "twin", "recorded", "error", "source"], profile_rows()),
        ]
    )


if __name__ == "__main__":
    print(markdown_tables())
