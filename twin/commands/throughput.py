"""The ``clustertwin throughput`` command: step time, MFU and goodput of a job file."""

from __future__ import annotations

import argparse
import logging
import math
from pathlib import Path
from typing import Any

from twin.commands.jsonout import dumps
from twin.training import goodput
from twin.training import steptime as training
from twin.training.jobfile import JobFileError, load_job
from twin.training.report import site_report, throughput_report
from twin.training.sitejob import PlacementError

log = logging.getLogger(__name__)


def _fixed(value: float, spec: str, unit: str = "", never: str = "never (no failures)") -> str:
    """``value`` formatted with ``spec`` and ``unit``, or ``never`` when it is infinite or undefined."""
    return f"{value:{spec}}{unit}" if math.isfinite(value) else never


def _format_table(report: dict[str, Any]) -> str:
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


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
