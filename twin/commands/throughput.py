"""The ``clustertwin throughput`` command: step time, MFU and goodput of a job file."""

from __future__ import annotations

import argparse
import logging
import math
from pathlib import Path

from twin.commands.jsonout import dumps
from twin.physics import fabric
from twin.training import goodput, jobgoodput, memory
from twin.training import steptime as training
from twin.training.jobfile import JobFileError, TrainingJob, load_job
from twin.training.sitejob import PlacementError

log = logging.getLogger(__name__)


def fabric_factors(job: TrainingJob) -> training.FabricFactors:
    """Ring factors per dimension for the job's regular layout (rank order TP, CP, PP, DP)."""
    par = job.parallel
    pod, over = job.pod_gpus, job.oversubscription
    return training.FabricFactors(
        tp=1.0,
        cp=fabric.analytic_factor(par.tp, par.cp, pod, over),
        pp=fabric.analytic_factor(par.tp * par.cp, par.pp, pod, over),
        dp=fabric.analytic_factor(par.tp * par.cp * par.pp, par.dp, pod, over),
    )


def throughput_report(
    job: TrainingJob, factors: training.FabricFactors | None = None, storage: jobgoodput.StorageSystem | None = None
) -> dict:
    """All throughput and goodput figures of a job as a flat JSON-ready dict.

    ``factors`` (fabric fractions per dimension) default to the job file's regular
    layout (:func:`fabric_factors`); pass the ones a site placement gives instead, and
    the site's checkpoint ``storage``.
    """
    par, model = job.parallel, job.model
    factors = factors or fabric_factors(job)
    step = training.step_time(model, par, job.hardware, factors)
    n_nodes = math.ceil(par.n_gpus / job.hardware.gpus_per_node)
    n_params = training.parameter_count(model)
    good = jobgoodput.job_goodput(job, step.tokens_per_s, n_nodes, storage)
    mem = memory.job_memory(model, par, job.hardware)
    return {
        "job": job.name,
        "gpu": job.gpu,
        "n_gpus": par.n_gpus,
        "n_nodes": n_nodes,
        "n_params": n_params,
        "n_active_params": training.active_parameter_count(model),
        "n_micro_batches": par.micro_batches,
        "step_time_s": step.step_time_s,
        "tokens_per_s": step.tokens_per_s,
        "gpu_model_tflops": step.gpu_model_tflops,
        "gpu_hw_tflops": step.gpu_hw_tflops,
        "mfu_frac": step.mfu_frac,
        "tokens_per_j": step.tokens_per_j,
        "avg_gpu_power_w": step.avg_gpu_power_w,
        "bubble_frac": step.bubble_frac,
        "schedule": step.schedule,
        "n_virtual_stages": step.virtual_stages,
        "n_stage_layers": step.stage_layers,
        "stage_time_s": step.stage_time_s,
        "stage_imbalance_frac": max(step.stage_time_s) / (sum(step.stage_time_s) / len(step.stage_time_s)) - 1.0,
        "dp_overlap_frac": step.dp_overlap_frac,
        "clock_frac": step.clock_frac,
        "fabric_factor_dp_frac": factors.dp,
        "breakdown_s": step.breakdown_s,
        "ops_s": step.ops_s,
        **memory.report_fields(mem),
        "memory_warning": memory.warning(mem),
        **good,
    }


def site_report(job: TrainingJob, site: str) -> dict:
    """The job placed on GPUs 0..n−1 of a healthy site: fabric factors from the site's fabric."""
    from twin.site.load import load_site
    from twin.training import sitejob

    state = load_site(site)
    ids = sitejob.contiguous_placement(state, job.parallel.n_gpus)
    result = sitejob.evaluate_site_job(state, job, ids)
    f = result.fabric
    factors = training.FabricFactors(dp=f["dp"].factor_frac, pp=f["pp"].factor_frac, cp=f["cp"].factor_frac)
    report = throughput_report(job, factors, jobgoodput.site_storage(state))
    report["site"] = state.name
    report["fabric_limiting_tier_dp"] = f["dp"].limiting_tier
    return report


def _fixed(value: float, spec: str, unit: str = "", never: str = "never (no failures)") -> str:
    """``value`` formatted with ``spec`` and ``unit``, or ``never`` when it is infinite or undefined."""
    return f"{value:{spec}}{unit}" if math.isfinite(value) else never


def _format_table(report: dict) -> str:
    rows = [
        ("job", report["job"]),
        ("GPUs / nodes", f"{report['n_gpus']:,} {report['gpu']} / {report['n_nodes']:,}"),
        ("parameters", f"{report['n_params'] / 1e9:,.1f} B"),
        ("step time", f"{report['step_time_s']:.3f} s"),
        ("tokens/s", f"{report['tokens_per_s']:,.0f}"),
        ("model TFLOP/s per GPU", f"{report['gpu_model_tflops']:.1f}"),
        ("hardware TFLOP/s per GPU", f"{report['gpu_hw_tflops']:.1f}"),
        ("MFU", f"{100 * report['mfu_frac']:.1f} %"),
        ("tokens per joule", f"{report['tokens_per_j']:.2f}"),
        (
            "GPU memory (fullest stage)",
            f"{report['memory_total_gb']:.1f} GB of {report['hbm_usable_gb']:.1f} GB usable"
            + ("" if report["memory_fits_flag"] else " — does not fit"),
        ),
        ("job MTTF", _fixed(report["job_mttf_h"], ".2f", " h")),
        (
            "checkpoint write / restore / interval",
            f"{report['checkpoint_write_s']:.1f} s / {report['checkpoint_restore_s']:.1f} s / "
            f"{_fixed(report['checkpoint_interval_s'], '.0f', ' s')}",
        ),
        ("interruptions expected", f"{report['interruptions_expected_count']:.1f}"),
        ("ETTR", f"{100 * report['ettr_frac']:.1f} %"),
        ("goodput tokens/s", f"{report['goodput_tokens_per_s']:,.0f}"),
    ]
    step = report["step_time_s"]
    rows += [(f"  {k}", f"{v:.3f} s ({100 * v / step:.1f} %)") for k, v in report["breakdown_s"].items()]
    rows += [(f"    compute: {k}", f"{v:.3f} s") for k, v in report["ops_s"].items()]
    rows += [(f"  interruptions/day: {k}", f"{v:.2f}") for k, v in report["interruptions_per_day_by_cause"].items()]
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def run(args: argparse.Namespace) -> int:
    """Evaluate the job file and print strict JSON or a table; a bad job file raises :class:`JobFileError`."""
    job = load_job(Path(args.job))
    try:
        report = site_report(job, args.site) if args.site else throughput_report(job)
    except (training.TrainingConfigError, goodput.ReliabilityError, PlacementError) as exc:
        raise JobFileError(f"{args.job}: {exc}") from exc
    if report["memory_warning"]:
        log.warning("%s: %s", args.job, report["memory_warning"])
    if args.json:
        print(dumps(report, indent=2))
    else:
        print(_format_table(report))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``throughput`` to the ``clustertwin`` command."""
    parser = subparsers.add_parser(
        "throughput",
        help="step time, MFU and goodput of a training job file",
        description="Analytical step time, MFU, tokens per joule and goodput of a training job (docs/jobfile.md).",
    )
    parser.add_argument("--job", required=True, help="job file (TOML), e.g. data/jobs/llama3-405b-16k.toml")
    parser.add_argument(
        "--site", default=None, help="place the job on GPUs 0..n-1 of this site (name or file) and use its fabric"
    )
    parser.add_argument("--json", action="store_true", help="print a JSON object instead of a table")
    parser.set_defaults(func=run)
