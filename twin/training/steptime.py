"""Analytical step time of a dense decoder-only transformer under TP/PP/DP/CP parallelism.

The model follows Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
Clusters Using Megatron-LM", SC'21, arXiv:2104.04473 (FLOP count, pipeline bubble) and
the nccl-tests bus-bandwidth definitions (:mod:`twin.physics.fabric`).  One step processes
``global_batch`` sequences of ``seq_len`` tokens on ``tp·pp·dp·cp`` GPUs:

``step_s = (compute + tp_comm + cp_comm)·(1 + bubble_frac) + pp_comm + dp_comm``,
then divided by the pace-setting throughput factor of the slowest GPU (synchronous
training: every rank waits for the slowest one each step).

Rank order is Llama 3's ``[TP, CP, PP, DP]`` (TP innermost, DP outermost; Dubey et al.,
"The Llama 3 Herd of Models", arXiv:2407.21783 §3.3.2), so a TP group is a node's NVLink
domain when ``tp <= gpus_per_node`` and DP groups stride across the fabric.

Achievable compute (documented modelling assumption [E], not fitted to any validation
case): a GPU sustains ``peak · gemm_efficiency_frac · n/(n + TILE_WIDTH)`` where
``n = hidden/tp`` is the narrowest GEMM dimension a TP rank sees.  ``gemm_efficiency_frac``
(default 0.80) stands for the clock a GPU holds under a sustained BF16 GEMM at its power
limit times cuBLAS kernel efficiency; the second factor models edge-tile and wave
quantisation losses, which grow as tensor parallelism narrows the matrices.  Non-GEMM
(element-wise, norm, softmax) time, kernel launch gaps and optimizer steps are not
modelled separately and are the main known reasons the model overestimates throughput.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from twin.physics import fabric
RECOMPUTE_MODES = ("none", "selective", "full")
BYTES_PER_ACTIVATION = 2.0  # BF16 activations and gradients
BYTES_PER_GRADIENT = 2.0  # BF16 gradient reduce-scatter / parameter all-gather
# [E] edge-tile width of the GEMM model: Hopper/Ampere cuBLAS tiles are 64–256 wide.
TILE_WIDTH = 128.0
# [E] fraction of peak a large BF16 GEMM sustains at the power limit (clock × kernel efficiency).
GEMM_EFFICIENCY_FRAC = 0.80
# [E] fraction of link rate nccl-tests reaches as busbw on large messages (NVLink and RoCE).
COLLECTIVE_EFFICIENCY_FRAC = 0.80


class TrainingConfigError(ValueError):
    """An inconsistent model / parallelism / hardware description (names the field)."""


@dataclass(frozen=True)
class ModelSpec:
    """Dense decoder-only transformer shape."""

    layers: int
    hidden: int
    heads: int
    vocab: int
    seq_len: int
    ffn_hidden: int = 0  # 0 → 4·hidden
    kv_heads: int = 0  # 0 → heads (multi-head attention)
    gated_mlp: bool = False  # SwiGLU-style MLP with three ffn matrices

    @property
    def ffn(self) -> int:
        return self.ffn_hidden or 4 * self.hidden

    @property
    def kv(self) -> int:
        return self.kv_heads or self.heads


@dataclass(frozen=True)
class ParallelSpec:
    """Parallel layout and batch of one training job."""

    tp: int
    pp: int
    dp: int
    global_batch: int  # sequences per step
    cp: int = 1
    virtual_stages: int = 1
    micro_batch: int = 1  # sequences per micro-batch
    recompute: str = "none"
    allow_uneven_stages: bool = False  # layers need not divide pp·virtual_stages
    dp_overlap_frac: float = 0.0  # part of the DP collectives hidden behind compute
    pp_overlap_frac: float = 0.0
    cp_overlap_frac: float = 0.0
    tp_overlap_frac: float = 0.0

    @property
    def n_gpus(self) -> int:
        return self.tp * self.pp * self.dp * self.cp

    @property
    def micro_batches(self) -> int:
        return self.global_batch // (self.dp * self.micro_batch)


@dataclass(frozen=True)
class HardwareSpec:
    """Per-GPU hardware figures (see ``data/catalogue.toml`` for sources)."""

    peak_tflops: float
    nvlink_gbps: float  # per GPU, per direction
    nic_gbps: float  # per GPU scale-out NIC
    gpus_per_node: int = 8
    busy_power_w: float = 700.0  # GPU board power while computing (H100 SXM TDP)
    idle_power_w: float = 85.0  # GPU board power while waiting (H100 idle, catalogue)
    node_base_power_w: float = 1900.0  # CPU, NIC, fans per node (catalogue node entry)
    gemm_efficiency_frac: float = GEMM_EFFICIENCY_FRAC
    collective_efficiency_frac: float = COLLECTIVE_EFFICIENCY_FRAC


@dataclass(frozen=True)
class FabricFactors:
    """Fraction of the NIC bus bandwidth each parallel dimension's collectives get."""

    dp: float = 1.0
    pp: float = 1.0
    cp: float = 1.0
    tp: float = 1.0


@dataclass
class StepResult:
    """Throughput of one job configuration (units in names)."""

    step_time_s: float
    tokens_per_s: float
    gpu_model_tflops: float  # model FLOPs (no recompute) per second per GPU
    gpu_hw_tflops: float  # executed FLOPs incl. recomputation
    mfu_frac: float
    tokens_per_j: float
    avg_gpu_power_w: float
    pace_factor_frac: float
    breakdown_s: dict[str, float] = field(default_factory=dict)


def validate(model: ModelSpec, par: ParallelSpec, hw: HardwareSpec) -> None:
    """Raise :class:`TrainingConfigError` naming the first inconsistent field."""
    for name in ("layers", "hidden", "heads", "vocab", "seq_len"):
        if getattr(model, name) <= 0:
            raise TrainingConfigError(f"model.{name} must be positive, got {getattr(model, name)}")
    for name in ("tp", "pp", "dp", "cp", "virtual_stages", "micro_batch", "global_batch"):
        if getattr(par, name) <= 0:
            raise TrainingConfigError(f"parallel.{name} must be positive, got {getattr(par, name)}")
    if par.recompute not in RECOMPUTE_MODES:
        raise TrainingConfigError(f"parallel.recompute must be one of {RECOMPUTE_MODES}, got {par.recompute!r}")
    if model.hidden % model.heads:
        raise TrainingConfigError(f"model.hidden ({model.hidden}) not divisible by model.heads ({model.heads})")
    if model.heads % model.kv:
        raise TrainingConfigError(f"model.heads ({model.heads}) not divisible by model.kv_heads ({model.kv})")
    if model.heads % par.tp:
        raise TrainingConfigError(f"model.heads ({model.heads}) not divisible by parallel.tp ({par.tp})")
    if model.ffn % par.tp:
        raise TrainingConfigError(f"model.ffn_hidden ({model.ffn}) not divisible by parallel.tp ({par.tp})")
    if model.seq_len % par.cp:
        raise TrainingConfigError(f"model.seq_len ({model.seq_len}) not divisible by parallel.cp ({par.cp})")
    chunks = par.pp * par.virtual_stages
    if not par.allow_uneven_stages and model.layers % chunks:
        raise TrainingConfigError(
            f"model.layers ({model.layers}) not divisible by parallel.pp·virtual_stages ({chunks}); "
            "set parallel.allow_uneven_stages = true to accept unequal stages"
        )
    if par.virtual_stages > 1 and par.pp == 1:
        raise TrainingConfigError("parallel.virtual_stages > 1 needs parallel.pp > 1")
    if par.global_batch % (par.dp * par.micro_batch):
        raise TrainingConfigError(
            f"parallel.global_batch ({par.global_batch}) not divisible by parallel.dp·micro_batch "
            f"({par.dp * par.micro_batch})"
        )
    if par.virtual_stages > 1 and par.micro_batches % par.pp:
        raise TrainingConfigError(
            f"interleaved pipeline needs micro-batches per step ({par.micro_batches}) divisible by parallel.pp ({par.pp})"
        )
    for name in ("dp_overlap_frac", "pp_overlap_frac", "cp_overlap_frac", "tp_overlap_frac"):
        value = getattr(par, name)
        if not 0.0 <= value <= 1.0:
            raise TrainingConfigError(f"parallel.{name} must be in [0, 1], got {value}")
    for name in ("peak_tflops", "nvlink_gbps", "nic_gbps", "gpus_per_node"):
        if getattr(hw, name) <= 0:
            raise TrainingConfigError(f"hardware.{name} must be positive, got {getattr(hw, name)}")
    if hw.busy_power_w < hw.idle_power_w:
        raise TrainingConfigError("hardware.busy_power_w must be at least hardware.idle_power_w")


# --- FLOP accounting ------------------------------------------------------------------
def layer_forward_flops(model: ModelSpec) -> dict[str, float]:
    """Forward matmul FLOPs of one transformer layer for one sequence, by matmul.

    With ``s`` = seq_len, ``h`` = hidden, ``h_kv = h·kv_heads/heads``, ``f`` = ffn_hidden:
    QKV projection ``2·s·h·(h + 2·h_kv)``; attention scores ``QKᵀ`` and ``softmax·V``
    ``2·s²·h`` each; output projection ``2·s·h²``; MLP ``2·s·h·f`` per matrix (2 matrices,
    3 when gated).  For ``h_kv = h`` and ``f = 4h`` the total is ``24·s·h²·(1 + s/(6h))``,
    Megatron's per-layer count (Narayanan et al. SC'21 Appendix, arXiv:2104.04473).
    Causal masking is not discounted, as in Megatron's count.
    """
    s, h = float(model.seq_len), float(model.hidden)
    h_kv = h * model.kv / model.heads
    mlp_mats = 3.0 if model.gated_mlp else 2.0
    return {
        "qkv": 2.0 * s * h * (h + 2.0 * h_kv),
        "attn_scores": 4.0 * s * s * h,
        "attn_out": 2.0 * s * h * h,
        "mlp": mlp_mats * 2.0 * s * h * model.ffn,
    }


def logits_forward_flops(model: ModelSpec) -> float:
    """Forward FLOPs of the output (logit) layer for one sequence: ``2·s·h·V``."""
    return 2.0 * model.seq_len * model.hidden * model.vocab


def model_flops_per_sequence(model: ModelSpec) -> float:
    """Model FLOPs of forward + backward per sequence (3× forward), no recomputation."""
    layer = sum(layer_forward_flops(model).values())
    return 3.0 * (model.layers * layer + logits_forward_flops(model))


def recompute_flops_per_sequence(model: ModelSpec, recompute: str) -> float:
    """Extra forward FLOPs per sequence spent recomputing activations.

    ``full`` repeats every layer's forward pass; ``selective`` repeats only the
    attention-score matmuls (Korthikanti et al., "Reducing Activation Recomputation in
    Large Transformer Models", arXiv:2205.05198); ``none`` adds nothing.  The logit
    layer is never recomputed.
    """
    per_layer = layer_forward_flops(model)
    if recompute == "full":
        return model.layers * sum(per_layer.values())
    if recompute == "selective":
        return model.layers * per_layer["attn_scores"]
    if recompute == "none":
        return 0.0
    raise TrainingConfigError(f"parallel.recompute must be one of {RECOMPUTE_MODES}, got {recompute!r}")


def megatron_flops_per_step(batch: int, seq_len: int, layers: int, hidden: int, vocab: int, recompute: bool) -> float:
    """Megatron's closed form [Megatron-SC21 eq. 3].

    ``72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h))`` without recomputation and
    ``96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h))`` with full recomputation.
    """
    b, s, l, h, v = (float(x) for x in (batch, seq_len, layers, hidden, vocab))
    if recompute:
        return 96.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h))
    return 72.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (12.0 * l * h))


def parameter_count(model: ModelSpec) -> float:
    """Weights of the model: layers (attention, MLP, 2 norms) plus untied input/output embeddings."""
    h = float(model.hidden)
    h_kv = h * model.kv / model.heads
    mlp_mats = 3.0 if model.gated_mlp else 2.0
    per_layer = h * (h + 2.0 * h_kv) + h * h + mlp_mats * h * model.ffn + 4.0 * h
    return model.layers * per_layer + 2.0 * model.vocab * h


# --- efficiency and communication ---------------------------------------------------
def achieved_tflops_per_gpu(model: ModelSpec, par: ParallelSpec, hw: HardwareSpec) -> float:
    """Sustained TFLOP/s of one GPU on this model's matmuls (see module docstring)."""
    n = model.hidden / par.tp
    return hw.peak_tflops * hw.gemm_efficiency_frac * n / (n + TILE_WIDTH)


def group_bandwidth_gbps(span_gpus: int, hw: HardwareSpec, fabric_frac: float) -> float:
    """Per-GPU bus bandwidth of a group spanning ``span_gpus`` consecutive ranks.

    Inside one node the group uses NVLink, otherwise the scale-out NIC scaled by the
    fabric factor; both at the nccl-tests efficiency.
    """
    if span_gpus <= hw.gpus_per_node:
        return hw.nvlink_gbps * hw.collective_efficiency_frac
    return hw.nic_gbps * hw.collective_efficiency_frac * fabric_frac


def _gbps_to_bytes_per_s(gbps: float) -> float:
    return gbps * 1e9 / 8.0


def communication_s(model: ModelSpec, par: ParallelSpec, hw: HardwareSpec, factors: FabricFactors) -> dict[str, float]:
    """Exposed communication seconds per step by dimension (before bubble and pace).

    * TP (Megatron with sequence parallelism): per layer and micro-batch 2 all-reduce
      equivalents forward and 2 backward (+2 with full recompute) of ``b·s/cp·h`` BF16
      activations over ``tp`` ranks.
    * CP (all-gather attention, Llama 3 §3.3.2): all-gather of K and V forward
      (+1 with full recompute) and reduce-scatter of their gradients backward, over ``cp`` ranks.
    * PP: one activation send forward and one gradient send backward per micro-batch and
      model chunk, ``b·s/cp·h/tp`` bytes per rank.
    * DP: reduce-scatter of BF16 gradients plus all-gather of parameters (the
      all-reduce volume) of the ``P/(tp·pp)`` weights a rank holds, over ``dp·cp`` ranks.
    """
    b, s, h = par.micro_batch, model.seq_len / par.cp, model.hidden
    m, v = par.micro_batches, par.virtual_stages
    layers_per_gpu = model.layers / par.pp
    act_bytes = b * s * h * BYTES_PER_ACTIVATION
    out: dict[str, float] = {}

    tp_calls = 6.0 if par.recompute == "full" else 4.0
    if par.tp > 1:
        bw = _gbps_to_bytes_per_s(group_bandwidth_gbps(par.tp, hw, factors.tp))
        one = fabric.collective_time_s("all_reduce", act_bytes, par.tp, bw)
        out["tp_comm"] = tp_calls * layers_per_gpu * m * one * (1.0 - par.tp_overlap_frac)
    else:
        out["tp_comm"] = 0.0

    if par.cp > 1:
        kv_bytes = 2.0 * b * model.seq_len * h * model.kv / model.heads / par.tp * BYTES_PER_ACTIVATION
        bw = _gbps_to_bytes_per_s(group_bandwidth_gbps(par.tp * par.cp, hw, factors.cp))
        gather = fabric.collective_time_s("all_gather", kv_bytes, par.cp, bw)
        calls = 3.0 if par.recompute == "full" else 2.0
        out["cp_comm"] = calls * layers_per_gpu * m * gather * (1.0 - par.cp_overlap_frac)
    else:
        out["cp_comm"] = 0.0

    if par.pp > 1:
        bw = _gbps_to_bytes_per_s(group_bandwidth_gbps(par.tp * par.cp * par.pp, hw, factors.pp))
        send = act_bytes / par.tp / bw
        out["pp_comm"] = 2.0 * m * v * send * (1.0 - par.pp_overlap_frac)
    else:
        out["pp_comm"] = 0.0

    n_dp = par.dp * par.cp
    if n_dp > 1:
        grad_bytes = parameter_count(model) / (par.tp * par.pp) * BYTES_PER_GRADIENT
        bw = _gbps_to_bytes_per_s(group_bandwidth_gbps(par.n_gpus, hw, factors.dp))
        out["dp_comm"] = fabric.collective_time_s("all_reduce", grad_bytes, n_dp, bw) * (1.0 - par.dp_overlap_frac)
    else:
        out["dp_comm"] = 0.0
    return out


def bubble_frac(par: ParallelSpec) -> float:
    """Pipeline bubble over ideal time, ``(p − 1)/(v·m)`` (Narayanan et al. SC'21 §2.2)."""
    return (par.pp - 1) / (par.virtual_stages * par.micro_batches)


# --- the step model -------------------------------------------------------------------
def step_time(
    model: ModelSpec,
    par: ParallelSpec,
    hw: HardwareSpec,
    factors: FabricFactors | None = None,
    pace_factor_frac: float = 1.0,
) -> StepResult:
    """Step time, throughput, MFU and energy efficiency of one job.

    Parameters
    ----------
    model, par, hw : job description (validated here).
    factors : fabric bus-bandwidth fractions per dimension (1 = full NIC rate), see
        :func:`twin.physics.fabric.job_fabric_factors`.
    pace_factor_frac : throughput factor of the slowest participating GPU (1 = full speed),
        see :func:`pace_factor`.  Compute and bubble stretch by ``1/pace``.

    Returns
    -------
    StepResult
        ``breakdown_s`` has ``compute, tp_comm, cp_comm, pp_comm, dp_comm, bubble,
        throttle_loss`` in seconds; they sum to ``step_time_s``.
    """
    validate(model, par, hw)
    if not 0.0 < pace_factor_frac <= 1.0:
        raise TrainingConfigError(f"pace_factor_frac must be in (0, 1], got {pace_factor_frac}")
    factors = factors or FabricFactors()
    n = par.n_gpus
    model_flops = model_flops_per_sequence(model) * par.global_batch
    hw_flops = model_flops + recompute_flops_per_sequence(model, par.recompute) * par.global_batch
    compute_s = hw_flops / (n * achieved_tflops_per_gpu(model, par, hw) * 1e12)
    comm = communication_s(model, par, hw, factors)
    bubble_s = bubble_frac(par) * (compute_s + comm["tp_comm"] + comm["cp_comm"])
    throttle_s = (compute_s + bubble_s) * (1.0 / pace_factor_frac - 1.0)
    breakdown = {"compute": compute_s, **comm, "bubble": bubble_s, "throttle_loss": throttle_s}
    breakdown = {k: breakdown[k] for k in ("compute", "tp_comm", "pp_comm", "dp_comm", "cp_comm", "bubble", "throttle_loss")}
    step_s = float(sum(breakdown.values()))
    tokens_per_s = par.global_batch * model.seq_len / step_s
    tflops = model_flops / (n * step_s) / 1e12
    busy_frac = (compute_s + throttle_s) / step_s
    gpu_power_w = hw.idle_power_w + (hw.busy_power_w - hw.idle_power_w) * busy_frac
    site_power_w = n * gpu_power_w + n / hw.gpus_per_node * hw.node_base_power_w
    return StepResult(
        step_time_s=step_s,
        tokens_per_s=tokens_per_s,
        gpu_model_tflops=tflops,
        gpu_hw_tflops=hw_flops / (n * step_s) / 1e12,
        mfu_frac=tflops / hw.peak_tflops,
        tokens_per_j=tokens_per_s / site_power_w,
        avg_gpu_power_w=gpu_power_w,
        pace_factor_frac=pace_factor_frac,
        breakdown_s=breakdown,
    )


# --- synchronous pace and bottlenecks -------------------------------------------------
def pace_factor(throttle_frac: np.ndarray, job_gpu_ids: np.ndarray) -> float:
    """Throughput factor of the slowest GPU of the job (synchronous training).

    ``throttle_frac`` is per site GPU (1 = full speed, NaN = unknown, treated as 1);
    a GPU at 0 (down) stops the job and gives 0.
    """
    f = np.asarray(throttle_frac, dtype=np.float64)[np.asarray(job_gpu_ids)]
    if f.size == 0:
        raise TrainingConfigError("job has no GPUs")
    return float(np.clip(np.nan_to_num(f, nan=1.0), 0.0, 1.0).min())


@dataclass
class BottleneckReport:
    """Which GPUs/racks set a synchronous job's pace and what draining them recovers."""

    pace_factor_frac: float
    pace_after_drain_frac: float
    bottleneck_gpus: np.ndarray  # int32 site GPU ids
    bottleneck_racks: np.ndarray  # int32 rack ids
    drain_gain_frac: float  # throughput gain if the bottleneck racks' GPUs are replaced by spares
    shrink_dp_gain_frac: float  # throughput change if the DP replicas holding them are dropped
    replicas_dropped: int


def bottleneck_analysis(
    throttle_frac: np.ndarray,
    job_gpu_ids: np.ndarray,
    gpu_rack: np.ndarray,
    gpus_per_replica: int,
    tolerance_frac: float = 0.01,
) -> BottleneckReport:
    """Find the racks whose GPUs slow the job and the gain of draining them.

    Bottleneck GPUs are those whose factor is more than ``tolerance_frac`` below the
    job's 90th-percentile factor (the pace the bulk of the job could hold); their racks
    are the bottleneck racks.  Draining (replacing every job GPU in those racks by a
    full-speed spare) lifts the pace to the slowest remaining GPU: gain
    ``pace_after/pace − 1`` (compute-bound approximation: throughput ∝ pace).  Shrinking DP
    instead drops every replica (``gpus_per_replica`` consecutive job ranks, i.e. the
    DP-outermost order) holding a bottleneck GPU: gain ``(R − k)/R · pace_after/pace − 1``.
    """
    ids = np.asarray(job_gpu_ids, dtype=np.int64)
    f = np.clip(np.nan_to_num(np.asarray(throttle_frac, dtype=np.float64)[ids], nan=1.0), 0.0, 1.0)
    pace = float(f.min())
    reference = float(np.quantile(f, 0.9))
    slow = f < reference * (1.0 - tolerance_frac)
    racks = np.unique(np.asarray(gpu_rack)[ids[slow]]).astype(np.int32)
    in_drained_rack = np.isin(np.asarray(gpu_rack)[ids], racks)
    after = float(f[~in_drained_rack].min()) if (~in_drained_rack).any() else 1.0
    after = max(after, pace)
    n_replicas = max(ids.size // gpus_per_replica, 1)
    replica = np.arange(ids.size) // gpus_per_replica
    dropped = np.unique(replica[slow]).size
    survivors = ~np.isin(replica, np.unique(replica[slow]))
    after_shrink = float(f[survivors].min()) if survivors.any() else 0.0
    if pace <= 0.0:
        drain_gain = float("inf") if after > 0 else 0.0
        shrink_gain = float("inf") if after_shrink > 0 and dropped < n_replicas else 0.0
    else:
        drain_gain = after / pace - 1.0
        shrink_gain = (n_replicas - dropped) / n_replicas * after_shrink / pace - 1.0
    return BottleneckReport(
        pace_factor_frac=pace,
        pace_after_drain_frac=after,
        bottleneck_gpus=ids[slow].astype(np.int32),
        bottleneck_racks=racks,
        drain_gain_frac=drain_gain,
        shrink_dp_gain_frac=shrink_gain,
        replicas_dropped=int(dropped),
    )
