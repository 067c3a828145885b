"""Training-job files (``data/jobs/*.toml``): parse, apply defaults, validate, build specs.

Fields are documented in ``docs/jobfile.md``.  Every error names the file and the
``section.field`` at fault.  GPU figures come from the equipment catalogue
(``data/catalogue.toml``, tables ``[gpu."NAME"]`` with :class:`twin.site.tables.GpuSpec` fields).
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import Any

from twin.errors import InputError
from twin.site.limits import MAX_GPUS
from twin.site.tables import GpuSpec
from twin.textfile import read_text
from twin.training import goodput, memory, models, pipeline
from twin.training import steptime as training

CATALOGUE_PATH = Path(__file__).resolve().parents[2] / "data" / "catalogue.toml"
REQUIRED = object()
AUTO = "auto"
MATURE = "mature"

# section -> field -> (type(s), default or REQUIRED)
_SCHEMA: dict[str, dict[str, tuple[tuple[type, ...], Any]]] = {
    "model": {
        "layers": ((int,), REQUIRED),
        "hidden": ((int,), REQUIRED),
        "heads": ((int,), REQUIRED),
        "vocab": ((int,), REQUIRED),
        "seq_len": ((int,), REQUIRED),
        "ffn_hidden": ((int,), 0),
        "kv_heads": ((int,), 0),
        "gated_mlp": ((bool,), False),
        "experts": ((int,), 0),
        "experts_per_token": ((int,), 1),
        "trainable_frac": ((int, float), 1.0),
    },
    "parallel": {
        "tp": ((int,), 1),
        "pp": ((int,), 1),
        "dp": ((int,), REQUIRED),
        "cp": ((int,), 1),
        "virtual_stages": ((int,), 0),
        "micro_batch": ((int,), 1),
        "global_batch": ((int,), REQUIRED),
        "recompute": ((str,), "none"),
        "allow_uneven_stages": ((bool,), False),
        "dp_overlap_frac": ((int, float, str), AUTO),
        "pp_overlap_frac": ((int, float), 0.0),
        "cp_overlap_frac": ((int, float), 0.0),
        "tp_overlap_frac": ((int, float), 0.0),
        "schedule": ((str,), pipeline.DEFAULT_SCHEDULE),
        "flash_attention": ((bool,), True),
        "dp_mode": ((str,), "ddp"),
        "dp_bucket_mb": ((int, float), training.DEFAULT_DP_BUCKET_MB),
        "ep": ((int,), 1),
        "first_stage_layers": ((int,), -1),
        "last_stage_layers": ((int,), -1),
    },
    "hardware": {
        "gpu": ((str,), "H100-SXM5-80GB"),
        "peak_tflops": ((int, float), None),
        "gpus_per_node": ((int,), 8),
        "nic_gbps_per_gpu": ((int, float), 400.0),
        "nvlink_gbps": ((int, float), None),
        "busy_power_w": ((int, float), None),
        "idle_power_w": ((int, float), None),
        "node_base_power_w": ((int, float), None),
        "gemm_efficiency_frac": ((int, float), None),
        "collective_efficiency_frac": ((int, float), training.COLLECTIVE_EFFICIENCY_FRAC),
        "hbm_gbyte_per_s": ((int, float), None),
        "power_limit_w": ((int, float), None),
        "hbm_gb": ((int, float), None),
    },
    "fabric": {
        "pod_gpus": ((int,), 4096),
        "oversubscription": ((int, float), 1.0),
    },
    "reliability": {
        "failures_per_1000_node_days": ((int, float, str), AUTO),
        "checkpoint_write_s": ((int, float, str), AUTO),
        "storage_write_gbps": ((int, float), goodput.DEFAULT_STORAGE_WRITE_GBPS),
        "restart_s": ((int, float), goodput.DEFAULT_RESTART_S),
        "checkpoint_interval_s": ((int, float, str), AUTO),
        "duration_days": ((int, float), 30.0),
        "storage_read_gbps": ((int, float), goodput.DEFAULT_STORAGE_READ_GBPS),
        "storage_node_gbps": ((int, float), goodput.DEFAULT_STORAGE_NODE_GBPS),
        "storage_share_frac": ((int, float), 1.0),
        "checkpoint_restore_s": ((int, float, str), AUTO),
        "software_failures_per_job_day": ((int, float), goodput.DEFAULT_SOFTWARE_FAILURES_PER_JOB_DAY),
        "software_failures_per_1000_node_days": ((int, float, str), AUTO),
        "fleet_age_days": ((int, float, str), MATURE),
        "eval_interval_s": ((int, float), 0.0),
        "eval_s": ((int, float), 0.0),
    },
}
_TOP_LEVEL = {"name": str, "description": str, "source": str}

# section.field -> (lowest, highest, lowest excluded): every number has a finite range (docs/jobfile.md)
_RANGES: dict[str, tuple[float, float, bool]] = {
    "model.layers": (1, 10_000, False),
    "model.hidden": (1, 1_000_000, False),
    "model.heads": (1, 100_000, False),
    "model.vocab": (1, 10_000_000, False),
    "model.seq_len": (1, 100_000_000, False),
    "model.ffn_hidden": (0, 10_000_000, False),
    "model.kv_heads": (0, 100_000, False),
    "parallel.tp": (1, MAX_GPUS, False),
    "parallel.pp": (1, MAX_GPUS, False),
    "parallel.dp": (1, MAX_GPUS, False),
    "parallel.cp": (1, MAX_GPUS, False),
    "parallel.virtual_stages": (1, 10_000, False),
    "parallel.micro_batch": (1, 1_000_000, False),
    "parallel.global_batch": (1, 1_000_000_000, False),
    "parallel.dp_overlap_frac": (0.0, 1.0, False),
    "parallel.pp_overlap_frac": (0.0, 1.0, False),
    "parallel.cp_overlap_frac": (0.0, 1.0, False),
    "parallel.tp_overlap_frac": (0.0, 1.0, False),
    "hardware.peak_tflops": (0.0, 100_000.0, True),
    "hardware.gpus_per_node": (1, 1_024, False),
    "hardware.nic_gbps_per_gpu": (0.0, 100_000.0, True),
    "hardware.nvlink_gbps": (0.0, 1_000_000.0, True),
    "hardware.busy_power_w": (0.0, 10_000.0, True),
    "hardware.idle_power_w": (0.0, 10_000.0, False),
    "hardware.node_base_power_w": (0.0, 100_000.0, False),
    "hardware.gemm_efficiency_frac": (0.0, 1.0, True),
    "hardware.collective_efficiency_frac": (0.0, 1.0, True),
    "fabric.pod_gpus": (1, MAX_GPUS, False),
    "fabric.oversubscription": (1.0, 1_000.0, False),
    "reliability.failures_per_1000_node_days": (0.0, 1_000_000.0, False),
    "reliability.checkpoint_write_s": (0.0, 1e7, False),
    "reliability.storage_write_gbps": (0.0, 1e9, True),
    "reliability.restart_s": (0.0, 1e7, False),
    "reliability.checkpoint_interval_s": (0.0, 1e9, True),
    "reliability.duration_days": (0.0, 36_500.0, True),
    "reliability.eval_interval_s": (0.0, 1e9, False),
    "reliability.eval_s": (0.0, 1e7, False),
    "model.experts": (0, 100000, False),
    "model.experts_per_token": (1, 1000, False),
    "model.trainable_frac": (0.0, 1.0, False),
    "parallel.dp_bucket_mb": (0.0, 1000000.0, True),
    "parallel.ep": (1, 100000, False),
    "parallel.first_stage_layers": (-1, 10000, False),
    "parallel.last_stage_layers": (-1, 10000, False),
    "hardware.hbm_gbyte_per_s": (0.0, 1000000.0, True),
    "hardware.power_limit_w": (0.0, 100000.0, True),
    "hardware.hbm_gb": (0.0, 100000.0, True),
    "reliability.storage_read_gbps": (0.0, 1000000000.0, True),
    "reliability.storage_node_gbps": (0.0, 1000000.0, True),
    "reliability.storage_share_frac": (0.0, 1.0, True),
    "reliability.checkpoint_restore_s": (0.0, 10000000.0, False),
    "reliability.software_failures_per_job_day": (0.0, 1000000.0, False),
    "reliability.software_failures_per_1000_node_days": (0.0, 1000000.0, False),
    "reliability.fleet_age_days": (0.0, 36500.0, False),
}


class JobFileError(InputError):
    """A job file or catalogue that cannot be used; the message names file and field."""


@dataclass(frozen=True)
class ReliabilitySpec:
    """Failure and checkpoint inputs of a job (``None`` = automatic).

    ``failures_per_1000_node_days`` given is the job's total rate, all causes; ``None`` takes
    the catalogue's hardware rate of the GPU type plus the software rate.
    """

    failures_per_1000_node_days: float | None
    checkpoint_write_s: float | None
    storage_write_gbps: float
    restart_s: float
    checkpoint_interval_s: float | None
    duration_days: float
    storage_read_gbps: float = goodput.DEFAULT_STORAGE_READ_GBPS
    storage_node_gbps: float = goodput.DEFAULT_STORAGE_NODE_GBPS
    storage_share_frac: float = 1.0
    checkpoint_restore_s: float | None = None
    software_failures_per_job_day: float = goodput.DEFAULT_SOFTWARE_FAILURES_PER_JOB_DAY
    software_failures_per_1000_node_days: float | None = None  # None: Llama 3's, per GPU-day × GPUs per node
    fleet_age_days: float = float("inf")  # "mature": no burn-in
    eval_interval_s: float = 0.0  # training time between evaluations, 0 = none (job power phases)
    eval_s: float = 0.0  # duration of one evaluation


@dataclass(frozen=True)
class TrainingJob:
    """A parsed, validated job file."""

    name: str
    description: str
    model: training.ModelSpec
    parallel: training.ParallelSpec
    hardware: training.HardwareSpec
    gpu: str
    pod_gpus: int
    oversubscription: float
    reliability: ReliabilitySpec
    source_file: str = ""
    # hardware interruptions per 1,000 GPU-days of the GPU type (catalogue ``failures_per_1000_gpu_days``)
    hw_failures_per_1000_gpu_days: float = goodput.DEFAULT_FAILURES_PER_1000_NODE_DAYS / 8.0


# --- catalogue ------------------------------------------------------------------------
def load_gpu_catalogue(path: Path | str = CATALOGUE_PATH) -> dict[str, GpuSpec]:
    """GPU types of the catalogue file: ``[gpu."NAME"]`` tables → :class:`GpuSpec`."""
    data = _read_toml(Path(path))
    names = [f.name for f in fields(GpuSpec) if f.name != "name"]
    required = [f.name for f in fields(GpuSpec) if f.name != "name" and f.default is MISSING]
    out: dict[str, GpuSpec] = {}
    for gpu_name, table in data.get("gpu", {}).items():
        missing = [n for n in required if n not in table]
        if missing:
            raise JobFileError(f"{path}: gpu.{gpu_name!r} lacks {', '.join(missing)}")
        out[gpu_name] = GpuSpec(name=gpu_name, **{n: float(table[n]) for n in names if n in table})
    if not out:
        raise JobFileError(f'{path}: no [gpu."NAME"] tables')
    return out


def node_base_power_w(gpu_name: str, path: Path | str = CATALOGUE_PATH) -> float | None:
    """``base_power_w`` of the first catalogue node type built on ``gpu_name`` (None if none)."""
    for table in _read_toml(Path(path)).get("node", {}).values():
        if table.get("gpu") == gpu_name and "base_power_w" in table:
            return float(table["base_power_w"])
    return None


# --- job files ------------------------------------------------------------------------
def load_job(path: Path | str, catalogue_path: Path | str = CATALOGUE_PATH) -> TrainingJob:
    """Read and validate a job file; errors name the file and ``section.field``."""
    path = Path(path)
    return parse_job(_read_toml(path), source=str(path), catalogue_path=catalogue_path)


def parse_job(data: dict[str, Any], source: str = "<job>", catalogue_path: Path | str = CATALOGUE_PATH) -> TrainingJob:
    """Build a :class:`TrainingJob` from an already-parsed TOML mapping."""
    _check_top_level(data, source)
    try:
        data = models.expand_model(data, source)
    except models.ModelPresetError as exc:
        raise JobFileError(str(exc)) from None
    sec = {name: _section(data, name, source) for name in _SCHEMA}
    gpu_name = sec["hardware"]["gpu"]
    hardware = _hardware(sec["hardware"], source, catalogue_path)
    n_gpus = _n_gpus(sec["parallel"])
    if n_gpus > MAX_GPUS:
        raise JobFileError(f"{source}: parallel: tp·cp·pp·dp = {n_gpus:,} GPUs, more than the limit of {MAX_GPUS:,}")
    model = training.ModelSpec(**{**sec["model"], "trainable_frac": float(sec["model"]["trainable_frac"])})
    parallel = training.ParallelSpec(**_parallel_fields(sec["parallel"], source))
    try:
        training.validate(model, parallel, hardware)
    except training.TrainingConfigError as exc:
        raise JobFileError(f"{source}: {exc}") from None
    est = memory.job_memory(model, parallel, hardware)
    if not est.states_fit_flag:
        raise JobFileError(
            f"{source}: parallel: weights, gradients and optimizer state need {est.largest_model_states_gb:.1f} GB "
            f"per GPU on the stage that holds the most, more than the {hardware.hbm_gb:g} GB of hardware.gpu {gpu_name!r}"
        )
    fab = sec["fabric"]
    if fab["pod_gpus"] <= 0:
        raise JobFileError(f"{source}: fabric.pod_gpus must be positive")
    if fab["oversubscription"] < 1.0:
        raise JobFileError(f"{source}: fabric.oversubscription must be >= 1 (down:up above the pod)")
    return TrainingJob(
        name=data.get("name", Path(source).stem),
        description=data.get("description", ""),
        model=model,
        parallel=parallel,
        hardware=hardware,
        gpu=gpu_name,
        pod_gpus=fab["pod_gpus"],
        oversubscription=float(fab["oversubscription"]),
        reliability=_reliability(sec["reliability"], source),
        source_file=source,
        hw_failures_per_1000_gpu_days=load_gpu_catalogue(catalogue_path)[gpu_name].failures_per_1000_gpu_days,
    )


def _check_top_level(data: dict[str, Any], source: str) -> None:
    """Only known sections and top-level keys (``model`` may name a preset of data/models.toml)."""
    for key, value in data.items():
        if key in _SCHEMA:
            continue
        if key == "model" and isinstance(value, str):
            continue  # a named model (data/models.toml)
        if key not in _TOP_LEVEL:
            raise JobFileError(
                f"{source}: unknown section or key {key!r} (expected {sorted(_SCHEMA) + sorted(_TOP_LEVEL)})"
            )
        if not isinstance(value, _TOP_LEVEL[key]):
            raise JobFileError(f"{source}: {key} must be a string")


def _hardware(hw_in: dict[str, Any], source: str, catalogue_path: Path | str) -> training.HardwareSpec:
    """``[hardware]`` with the catalogue GPU's figures where the file gives none."""
    catalogue = load_gpu_catalogue(catalogue_path)
    gpu_name = hw_in["gpu"]
    if gpu_name not in catalogue:
        raise JobFileError(f"{source}: hardware.gpu {gpu_name!r} not in the catalogue ({sorted(catalogue)})")
    spec = catalogue[gpu_name]
    base_w = hw_in["node_base_power_w"]
    if base_w is None:
        base_w = node_base_power_w(gpu_name, catalogue_path) or training.HardwareSpec.node_base_power_w

    def pick(key: str, default: float) -> float:
        return float(default if hw_in[key] is None else hw_in[key])

    hardware = training.HardwareSpec(
        peak_tflops=pick("peak_tflops", spec.peak_bf16_tflops),
        nvlink_gbps=pick("nvlink_gbps", spec.nvlink_gbps),
        nic_gbps=float(hw_in["nic_gbps_per_gpu"]),
        gpus_per_node=hw_in["gpus_per_node"],
        busy_power_w=pick("busy_power_w", spec.tdp_w),
        idle_power_w=pick("idle_power_w", spec.idle_power_w),
        node_base_power_w=float(base_w),
        gemm_efficiency_frac=pick("gemm_efficiency_frac", spec.gemm_efficiency_frac),
        collective_efficiency_frac=float(hw_in["collective_efficiency_frac"]),
        hbm_gbyte_per_s=pick("hbm_gbyte_per_s", spec.hbm_gbyte_per_s),
        power_limit_w=pick("power_limit_w", 0.0),
        hbm_gb=pick("hbm_gb", spec.hbm_gb),
    )
    for key in ("gemm_efficiency_frac", "collective_efficiency_frac"):
        if not 0.0 < getattr(hardware, key) <= 1.0:
            raise JobFileError(f"{source}: hardware.{key} must be in (0, 1]")
    return hardware


def _reliability(rel: dict[str, Any], source: str) -> ReliabilitySpec:
    """``[reliability]``: failure rate, checkpoints, storage, restart, duration."""
    reliability = ReliabilitySpec(
        failures_per_1000_node_days=_auto_or_number(rel, "failures_per_1000_node_days", source),
        checkpoint_write_s=_auto_or_number(rel, "checkpoint_write_s", source),
        storage_write_gbps=_positive(rel, "storage_write_gbps", source),
        restart_s=_nonneg(rel, "restart_s", source),
        checkpoint_interval_s=_auto_or_number(rel, "checkpoint_interval_s", source),
        duration_days=_positive(rel, "duration_days", source),
        **_reliability_extras(rel, source),
    )
    if reliability.checkpoint_interval_s is not None and reliability.checkpoint_interval_s <= 0:
        raise JobFileError(f'{source}: reliability.checkpoint_interval_s must be positive or "auto"')
    return reliability


def _parallel_fields(p: dict[str, Any], source: str) -> dict[str, Any]:
    """``[parallel]`` values as :class:`ParallelSpec` arguments (``"auto"`` DP overlap → None)."""
    out = {k: (float(v) if k.endswith("_frac") and not isinstance(v, str) else v) for k, v in p.items()}
    if isinstance(out["dp_overlap_frac"], str):
        if out["dp_overlap_frac"] != AUTO:
            raise JobFileError(
                f'{source}: parallel.dp_overlap_frac must be a number or "auto", got {p["dp_overlap_frac"]!r}'
            )
        out["dp_overlap_frac"] = None
    out["dp_bucket_mb"] = float(out["dp_bucket_mb"])
    return out


def _reliability_extras(rel: dict[str, Any], source: str) -> dict[str, Any]:
    """Storage, software-failure and fleet-age fields of ``[reliability]``."""
    share = float(rel["storage_share_frac"])
    if not 0.0 < share <= 1.0:
        raise JobFileError(f"{source}: reliability.storage_share_frac must be in (0, 1], got {share}")
    age = rel["fleet_age_days"]
    if isinstance(age, str):
        if age != MATURE:
            raise JobFileError(f'{source}: reliability.fleet_age_days must be a number or "mature", got {age!r}')
        age = float("inf")
    elif age < 0:
        raise JobFileError(f"{source}: reliability.fleet_age_days must be >= 0, got {age}")
    return {
        "storage_read_gbps": _positive(rel, "storage_read_gbps", source),
        "storage_node_gbps": _positive(rel, "storage_node_gbps", source),
        "storage_share_frac": share,
        "checkpoint_restore_s": _auto_or_number(rel, "checkpoint_restore_s", source),
        "software_failures_per_job_day": _nonneg(rel, "software_failures_per_job_day", source),
        "software_failures_per_1000_node_days": _software_rate(rel, source),
        "fleet_age_days": float(age),
        "eval_interval_s": float(rel["eval_interval_s"]),
        "eval_s": float(rel["eval_s"]),
    }


def _software_rate(rel: dict[str, Any], source: str) -> float | None:
    """``software_failures_per_1000_node_days`` (None = automatic); refused beside a total rate, which includes it."""
    software = _auto_or_number(rel, "software_failures_per_1000_node_days", source)
    if software is not None and not isinstance(rel["failures_per_1000_node_days"], str):
        raise JobFileError(
            f"{source}: reliability.software_failures_per_1000_node_days cannot be given with "
            "reliability.failures_per_1000_node_days, which is the job's total rate (all causes)"
        )
    return software


def _n_gpus(parallel: dict[str, Any]) -> int:
    return int(parallel["tp"] * parallel["cp"] * parallel["pp"] * parallel["dp"])


def _read_toml(path: Path) -> dict[str, Any]:
    text = read_text(path, lambda problem: JobFileError(f"{path}: {problem}"))
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise JobFileError(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:
        raise JobFileError(f"{path}: arrays or tables nested too deeply") from None


def _check_range(name: str, value: Any, source: str) -> None:
    """Numbers must be finite and inside the range of ``_RANGES``; strings are checked by their users."""
    if isinstance(value, str) or name not in _RANGES:
        return
    lo, hi, lo_open = _RANGES[name]
    if not (math.isfinite(value) and (lo < value if lo_open else lo <= value) and value <= hi):
        bracket = "(" if lo_open else "["
        raise JobFileError(f"{source}: {name} must be in {bracket}{lo:g}, {hi:g}], got {value!r}")


def _section(data: dict[str, Any], name: str, source: str) -> dict[str, Any]:
    raw = data.get(name, {})
    if not isinstance(raw, dict):
        raise JobFileError(f"{source}: [{name}] must be a table")
    schema = _SCHEMA[name]
    unknown = sorted(set(raw) - set(schema))
    if unknown:
        raise JobFileError(f"{source}: unknown field {name}.{unknown[0]} (known: {', '.join(schema)})")
    out: dict[str, Any] = {}
    for key, (types, default) in schema.items():
        if key not in raw:
            if default is REQUIRED:
                raise JobFileError(f"{source}: missing required field {name}.{key}")
            out[key] = default
            continue
        value = raw[key]
        bad_bool = isinstance(value, bool) and bool not in types
        if bad_bool or not isinstance(value, types):
            want = " or ".join(t.__name__ for t in types)
            raise JobFileError(f"{source}: {name}.{key} must be {want}, got {value!r}")
        _check_range(f"{name}.{key}", value, source)
        out[key] = value
    return out


def _auto_or_number(sec: dict[str, Any], key: str, source: str) -> float | None:
    value = sec[key]
    if isinstance(value, str):
        if value != AUTO:
            raise JobFileError(f'{source}: reliability.{key} must be a number or "auto", got {value!r}')
        return None
    if value < 0:
        raise JobFileError(f"{source}: reliability.{key} must be >= 0, got {value}")
    return float(value)


def _nonneg(sec: dict[str, Any], key: str, source: str) -> float:
    if sec[key] < 0:
        raise JobFileError(f"{source}: reliability.{key} must be >= 0, got {sec[key]}")
    return float(sec[key])


def _positive(sec: dict[str, Any], key: str, source: str) -> float:
    if sec[key] <= 0:
        raise JobFileError(f"{source}: reliability.{key} must be positive, got {sec[key]}")
    return float(sec[key])
