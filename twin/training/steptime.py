"""Analytical step time of a decoder-only transformer under TP/PP/DP/CP parallelism.

The model follows Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
Clusters Using Megatron-LM", SC'21, arXiv:2104.04473 (FLOP count, pipeline schedules) and
the nccl-tests bus-bandwidth definitions (:mod:`twin.physics.fabric`).  One step processes
``global_batch`` sequences of ``seq_len`` tokens on ``tp·pp·dp·cp`` GPUs in ``m`` micro-batches.

Per micro-batch, each pipeline stage spends the time of its layers' operations
(:mod:`twin.training.opcost`: a roofline per GEMM shape, memory-bound work at HBM
bandwidth, attention with or without flash attention) plus its TP/CP collectives; the
first and last stages add the embedding and the output layer.  The slowest stage sets
the pace (:mod:`twin.training.pipeline`):

``step_s = m·mean_stage + m·(slowest − mean_stage) + bubble(schedule)·m·slowest + pp_comm
+ exposed dp_comm + optimizer``, then stretched by ``1/pace`` for the slowest GPU
(synchronous training: every rank waits for the slowest one each step).

Rank order is Llama 3's ``[TP, CP, PP, DP]`` (TP innermost, DP outermost; Dubey et al.,
"The Llama 3 Herd of Models", arXiv:2407.21783 §3.3.2), so a TP group is a node's NVLink
domain when ``tp <= gpus_per_node`` and DP groups stride across the fabric.

Achievable compute (documented modelling assumption [E], not fitted to any validation
case): ``gemm_efficiency_frac`` (default 0.80) is the cuBLAS kernel efficiency of a large
BF16 GEMM at the clock the GPU holds at its TDP; a lower power limit lowers the clock
through the twin's DVFS law (:func:`twin.physics.thermal.clock_at_power_frac`), which
scales compute but not HBM bandwidth.

Data-parallel overlap is derived unless the job file overrides it: DDP reduces gradient
buckets during the last micro-batch's backward pass and FSDP prefetches layer parameters
during the forward pass and reduces gradients during the backward pass, so only what does
not fit that window, and at least the last bucket, is exposed.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from twin.physics import fabric, thermal
from twin.training import opcost, pipeline

RECOMPUTE_MODES = ("none", "selective", "full")
BYTES_PER_ACTIVATION = 2.0  # BF16 activations and gradients
BYTES_PER_GRADIENT = 2.0  # BF16 gradient reduce-scatter / parameter all-gather
TILE_WIDTH = opcost.TILE_WIDTH
DP_MODES = ("ddp", "fsdp")
# PyTorch DistributedDataParallel's default gradient bucket, bucket_cap_mb = 25 (torch docs).
DEFAULT_DP_BUCKET_MB = 25.0
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
    experts: int = 0  # mixture of experts: MLP experts per layer (0 or 1 = dense)
    experts_per_token: int = 1  # top-k routing
    trainable_frac: float = 1.0  # share of the weights trained (LoRA ≈ 0); memory check only

    @property
    def moe(self) -> bool:
        return self.experts > 1

    @property
    def active_experts(self) -> int:
        return self.experts_per_token if self.moe else 1

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
    virtual_stages: int = 0  # model chunks per stage for "interleaved"; 0 = default (pipeline module)
    micro_batch: int = 1  # sequences per micro-batch
    recompute: str = "none"
    allow_uneven_stages: bool = True  # accepted for old job files; uneven stages are always modelled
    dp_overlap_frac: float | None = None  # part of the DP collectives hidden; None = derived
    pp_overlap_frac: float = 0.0
    cp_overlap_frac: float = 0.0
    tp_overlap_frac: float = 0.0
    schedule: str = pipeline.DEFAULT_SCHEDULE
    flash_attention: bool = True
    dp_mode: str = "ddp"
    dp_bucket_mb: float = DEFAULT_DP_BUCKET_MB
    ep: int = 1  # expert-parallel size (carved out of dp, as in Megatron-Core)
    first_stage_layers: int = -1  # -1 = automatic split (pipeline.stage_layers)
    last_stage_layers: int = -1

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
    hbm_gbyte_per_s: float = 3350.0  # H100 SXM HBM3 (catalogue)
    power_limit_w: float = 0.0  # 0 = busy_power_w (the TDP)
    hbm_gb: float = 80.0  # HBM capacity per GPU [GB] (catalogue), for the memory check

    @property
    def limit_w(self) -> float:
        return self.power_limit_w or self.busy_power_w


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
    ops_s: dict[str, float] = field(default_factory=dict)  # "compute" by op class, sums to it
    stage_layers: list[int] = field(default_factory=list)
    stage_time_s: list[float] = field(default_factory=list)  # per micro-batch, incl. TP/CP comm
    schedule: str = pipeline.DEFAULT_SCHEDULE
    virtual_stages: int = 1
    bubble_frac: float = 0.0
    dp_overlap_frac: float = 0.0
    clock_frac: float = 1.0


def validate(model: ModelSpec, par: ParallelSpec, hw: HardwareSpec) -> None:
    """Raise :class:`TrainingConfigError` naming the first inconsistent field."""
    for name in ("layers", "hidden", "heads", "vocab", "seq_len"):
        if getattr(model, name) <= 0:
            raise TrainingConfigError(f"model.{name} must be positive, got {getattr(model, name)}")
    for name in ("tp", "pp", "dp", "cp", "ep", "micro_batch", "global_batch"):
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
    if model.experts < 0 or not 1 <= model.experts_per_token <= max(model.experts, 1):
        raise TrainingConfigError(
            f"model.experts_per_token ({model.experts_per_token}) must be in 1..model.experts ({model.experts})"
        )
    if par.ep > 1 and (not model.moe or model.experts % par.ep or par.dp % par.ep):
        raise TrainingConfigError(
            f"parallel.ep ({par.ep}) needs a mixture-of-experts model whose model.experts ({model.experts}) "
            f"and parallel.dp ({par.dp}) it divides"
        )
    if par.schedule not in pipeline.SCHEDULES:
        raise TrainingConfigError(f"parallel.schedule must be one of {pipeline.SCHEDULES}, got {par.schedule!r}")
    if par.dp_mode not in DP_MODES:
        raise TrainingConfigError(f"parallel.dp_mode must be one of {DP_MODES}, got {par.dp_mode!r}")
    if par.virtual_stages < 0:
        raise TrainingConfigError(f"parallel.virtual_stages must be positive, got {par.virtual_stages}")
    if par.virtual_stages > 1 and (par.pp == 1 or par.schedule != "interleaved"):
        raise TrainingConfigError('parallel.virtual_stages > 1 needs parallel.pp > 1 and schedule = "interleaved"')
    if par.global_batch % (par.dp * par.micro_batch):
        raise TrainingConfigError(
            f"parallel.global_batch ({par.global_batch}) not divisible by parallel.dp·micro_batch "
            f"({par.dp * par.micro_batch})"
        )
    if par.virtual_stages > 1 and par.micro_batches % par.pp:
        raise TrainingConfigError(
            f"interleaved pipeline needs micro-batches per step ({par.micro_batches}) divisible by parallel.pp ({par.pp})"
        )
    v = virtual_stages(model, par)
    if model.layers < par.pp * v:
        raise TrainingConfigError(
            f"model.layers ({model.layers}) fewer than parallel.pp·virtual_stages ({par.pp * v}): a chunk would be empty"
        )
    fixed = sum(x for x in (par.first_stage_layers, par.last_stage_layers) if x >= 0)
    if par.pp == 1 and fixed:
        raise TrainingConfigError("parallel.first_stage_layers / last_stage_layers need parallel.pp > 1")
    if fixed > model.layers or (par.pp > 2 and model.layers - fixed < par.pp - 2):
        raise TrainingConfigError(
            f"parallel.first_stage_layers + last_stage_layers ({fixed}) leave too few of model.layers ({model.layers}) "
            f"for the other {par.pp - 2} stages"
        )
    if par.dp_bucket_mb <= 0:
        raise TrainingConfigError(f"parallel.dp_bucket_mb must be positive, got {par.dp_bucket_mb}")
    for name in ("dp_overlap_frac", "pp_overlap_frac", "cp_overlap_frac", "tp_overlap_frac"):
        value = getattr(par, name)
        if value is not None and not 0.0 <= value <= 1.0:
            raise TrainingConfigError(f"parallel.{name} must be in [0, 1], got {value}")
    for name in ("peak_tflops", "nvlink_gbps", "nic_gbps", "gpus_per_node", "hbm_gbyte_per_s"):
        if getattr(hw, name) <= 0:
            raise TrainingConfigError(f"hardware.{name} must be positive, got {getattr(hw, name)}")
    if hw.busy_power_w < hw.idle_power_w:
        raise TrainingConfigError("hardware.busy_power_w must be at least hardware.idle_power_w")
    if hw.power_limit_w and not hw.idle_power_w < hw.power_limit_w:
        raise TrainingConfigError("hardware.power_limit_w must be above hardware.idle_power_w")


def virtual_stages(model: ModelSpec, par: ParallelSpec) -> int:
    """Model chunks per pipeline stage the schedule uses (see :mod:`twin.training.pipeline`)."""
    return pipeline.resolve_virtual_stages(par.schedule, par.virtual_stages, par.pp, par.micro_batches, model.layers)


# --- FLOP accounting ------------------------------------------------------------------
def layer_forward_flops(model: ModelSpec) -> dict[str, float]:
    """Forward matmul FLOPs of one transformer layer for one sequence, by matmul.

    With ``s`` = seq_len, ``h`` = hidden, ``h_kv = h·kv_heads/heads``, ``f`` = ffn_hidden:
    QKV projection ``2·s·h·(h + 2·h_kv)``; attention scores ``QKᵀ`` and ``softmax·V``
    ``2·s²·h`` each; output projection ``2·s·h²``; MLP ``2·s·h·f`` per matrix (2 matrices,
    3 when gated).  For ``h_kv = h`` and ``f = 4h`` the total is ``24·s·h²·(1 + s/(6h))``,
    Megatron's per-layer count (Narayanan et al. SC'21 Appendix, arXiv:2104.04473).
    Causal masking is not discounted, as in Megatron's count.  A mixture-of-experts layer
    runs ``experts_per_token`` expert MLPs per token plus the router ``2·s·h·E``
    (active, not total, parameters set the FLOPs; Fedus et al., arXiv:2101.03961).
    """
    s, h = float(model.seq_len), float(model.hidden)
    h_kv = h * model.kv / model.heads
    mlp_mats = 3.0 if model.gated_mlp else 2.0
    out = {
        "qkv": 2.0 * s * h * (h + 2.0 * h_kv),
        "attn_scores": 4.0 * s * s * h,
        "attn_out": 2.0 * s * h * h,
        "mlp": mlp_mats * 2.0 * s * h * model.ffn * model.active_experts,
    }
    if model.moe:
        out["router"] = 2.0 * s * h * model.experts
    return out


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


@functools.lru_cache(maxsize=256)
def expert_parameter_count(model: ModelSpec) -> float:
    """Weights of one layer's MLP experts (all of them; one MLP for a dense model)."""
    mlp_mats = 3.0 if model.gated_mlp else 2.0
    return mlp_mats * model.hidden * model.ffn * max(model.experts, 1)


@functools.lru_cache(maxsize=256)
def layer_parameter_count(model: ModelSpec) -> float:
    """Weights of one transformer layer: attention, MLP (all experts), router and two norms."""
    h = float(model.hidden)
    h_kv = h * model.kv / model.heads
    router = h * model.experts if model.moe else 0.0
    return h * (h + 2.0 * h_kv) + h * h + expert_parameter_count(model) + router + 4.0 * h


@functools.lru_cache(maxsize=256)
def active_parameter_count(model: ModelSpec) -> float:
    """Weights a token passes through: total minus the experts it is not routed to."""
    idle_experts = max(model.experts, 1) - model.active_experts
    return parameter_count(model) - model.layers * expert_parameter_count(model) * idle_experts / max(model.experts, 1)


@functools.lru_cache(maxsize=256)
def parameter_count(model: ModelSpec) -> float:
    """Weights of the model: layers (attention, MLP, 2 norms) plus untied input/output embeddings."""
    return model.layers * layer_parameter_count(model) + 2.0 * model.vocab * model.hidden


# --- device, operations and communication -------------------------------------------
def clock_frac(hw: HardwareSpec) -> float:
    """SM clock under sustained GEMMs at the power limit, relative to the clock at the TDP.

    The twin's DVFS law (:func:`twin.physics.thermal.clock_at_power_frac`) with the GEMM
    demand equal to ``busy_power_w``: 1 at the default limit, lower when capped.
    """
    if hw.limit_w >= hw.busy_power_w:
        return 1.0  # the GEMM demand fits under the limit: full clock
    return float(thermal.clock_at_power_frac(hw.limit_w, hw.busy_power_w, hw.idle_power_w))


def device(hw: HardwareSpec, clock: float | None = None) -> opcost.Device:
    """Compute rate and HBM bandwidth one GPU of ``hw`` sustains (``clock`` from :func:`clock_frac`)."""
    clock = clock_frac(hw) if clock is None else clock
    return opcost.Device(
        flops_per_s=hw.peak_tflops * 1e12 * hw.gemm_efficiency_frac * clock, hbm_bytes_per_s=hw.hbm_gbyte_per_s * 1e9
    )


def layer_shape(model: ModelSpec, par: ParallelSpec) -> opcost.LayerShape:
    """One layer as a TP rank sees it for one micro-batch."""
    return opcost.LayerShape(
        tokens=par.micro_batch * model.seq_len / par.cp,
        seq_len=model.seq_len,
        hidden=model.hidden,
        kv_hidden=model.hidden * model.kv / model.heads,
        ffn=model.ffn,
        heads=model.heads,
        tp=par.tp,
        micro_batch=par.micro_batch,
        gated_mlp=model.gated_mlp,
        experts=max(model.experts, 1),
        experts_per_token=model.active_experts,
        ep=par.ep,
    )


def layer_train_s(
    model: ModelSpec, par: ParallelSpec, hw: HardwareSpec, dev: opcost.Device | None = None
) -> dict[str, float]:
    """Forward + backward (+ recomputation) seconds of one layer per micro-batch, by op class.

    Backward costs twice the forward; ``full`` recomputation repeats the forward,
    ``selective`` repeats the attention part only (Korthikanti et al., arXiv:2205.05198).
    """
    fwd = opcost.layer_forward_s(layer_shape(model, par), dev or device(hw), par.flash_attention)
    out = {k: 3.0 * v for k, v in fwd.items()}
    if par.recompute == "full":
        out = {k: out[k] + fwd[k] for k in out}
    elif par.recompute == "selective":
        out["attention"] += fwd["attention"]
    return out


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


@functools.lru_cache(maxsize=256)
def _busbw_factor(op: str, n: int) -> float:
    return float(fabric.busbw_factor(op, n))


def _collective_s(op: str, size_bytes: float, n: int, busbw_bytes_per_s: float) -> float:
    """:func:`twin.physics.fabric.collective_time_s` with the bus-bandwidth factor cached (hot path)."""
    factor = _busbw_factor(op, n)
    if factor == 0.0:
        return 0.0
    return float("inf") if busbw_bytes_per_s <= 0.0 else size_bytes * factor / busbw_bytes_per_s


def communication_s(model: ModelSpec, par: ParallelSpec, hw: HardwareSpec, factors: FabricFactors) -> dict[str, float]:
    """Communication seconds: TP and CP per layer and micro-batch, PP and DP per step.

    * ``tp_layer``: (Megatron with sequence parallelism) 2 all-reduce equivalents forward
      and 2 backward (+2 with full recompute) of ``b·s/cp·h`` BF16 activations over ``tp`` ranks.
    * ``cp_layer``: (all-gather attention, Llama 3 §3.3.2) all-gather of K and V forward
      (+1 with full recompute) and reduce-scatter of their gradients backward, over ``cp`` ranks.
    * ``pp``: one activation send forward and one gradient send backward per micro-batch
      and model chunk, ``b·s/cp·h/tp`` bytes per rank.
    * ``dp``: reduce-scatter of BF16 gradients plus all-gather of parameters (the
      all-reduce volume) of the ``P/(tp·pp)`` weights a rank holds, over ``dp·cp`` ranks,
      before any overlap.
    """
    b, s, h = par.micro_batch, model.seq_len / par.cp, model.hidden
    act_bytes = b * s * h * BYTES_PER_ACTIVATION
    out = {"tp_layer": 0.0, "cp_layer": 0.0, "ep_layer": 0.0, "pp": 0.0, "dp": 0.0}
    if par.ep > 1:
        routed_bytes = act_bytes * model.active_experts / par.tp
        span = par.tp * par.cp * par.pp * par.ep
        bw = _gbps_to_bytes_per_s(group_bandwidth_gbps(span, hw, factors.dp))
        calls = 6.0 if par.recompute == "full" else 4.0
        out["ep_layer"] = calls * _collective_s("all_to_all", routed_bytes, par.ep, bw)
    if par.tp > 1:
        bw = _gbps_to_bytes_per_s(group_bandwidth_gbps(par.tp, hw, factors.tp))
        calls = 6.0 if par.recompute == "full" else 4.0
        out["tp_layer"] = calls * _collective_s("all_reduce", act_bytes, par.tp, bw) * (1.0 - par.tp_overlap_frac)
    if par.cp > 1:
        kv_bytes = 2.0 * b * model.seq_len * h * model.kv / model.heads / par.tp * BYTES_PER_ACTIVATION
        bw = _gbps_to_bytes_per_s(group_bandwidth_gbps(par.tp * par.cp, hw, factors.cp))
        calls = 3.0 if par.recompute == "full" else 2.0
        out["cp_layer"] = calls * _collective_s("all_gather", kv_bytes, par.cp, bw) * (1.0 - par.cp_overlap_frac)
    if par.pp > 1:
        bw = _gbps_to_bytes_per_s(group_bandwidth_gbps(par.tp * par.cp * par.pp, hw, factors.pp))
        out["pp"] = (
            2.0 * par.micro_batches * virtual_stages(model, par) * act_bytes / par.tp / bw * (1.0 - par.pp_overlap_frac)
        )
    n_dp = par.dp * par.cp
    if n_dp > 1:
        bw = _gbps_to_bytes_per_s(group_bandwidth_gbps(par.n_gpus, hw, factors.dp))
        out["dp"] = _collective_s("all_reduce", dense_grad_bytes(model, par), n_dp, bw)
        if n_dp // par.ep > 1:
            out["dp"] += _collective_s("all_reduce", expert_grad_bytes(model, par), n_dp // par.ep, bw)
    return out


def expert_grad_bytes(model: ModelSpec, par: ParallelSpec) -> float:
    """BF16 gradient bytes of the expert weights one rank holds (reduced over ``dp·cp/ep`` ranks)."""
    return model.layers * expert_parameter_count(model) / (par.tp * par.pp * par.ep) * BYTES_PER_GRADIENT


def dense_grad_bytes(model: ModelSpec, par: ParallelSpec) -> float:
    """BF16 gradient bytes of the non-expert weights one rank holds (reduced over ``dp·cp`` ranks)."""
    dense = parameter_count(model) - model.layers * expert_parameter_count(model)
    return dense / (par.tp * par.pp) * BYTES_PER_GRADIENT


def dp_exposed_s(dp_s: float, model: ModelSpec, par: ParallelSpec, stage_fwd_bwd_s: float) -> float:
    """Exposed data-parallel communication per step [s].

    With an explicit ``dp_overlap_frac`` the hidden part is that fraction.  Otherwise:
    ``ddp`` reduces gradient buckets of ``dp_bucket_mb`` during the backward pass of the
    last micro-batch (window ``⅔·stage_fwd_bwd_s``, backward being twice the forward);
    ``fsdp`` also prefetches parameters during the forward pass (window
    ``stage_fwd_bwd_s``) with one layer's parameters as its unit.  Exposed is
    ``max(last unit, dp_s − window)``, the last unit taking its share of ``dp_s`` by bytes.
    """
    if dp_s <= 0.0:
        return 0.0
    if par.dp_overlap_frac is not None:
        return dp_s * (1.0 - par.dp_overlap_frac)
    grad_bytes = dense_grad_bytes(model, par) + expert_grad_bytes(model, par)
    if par.dp_mode == "fsdp":
        unit_bytes = layer_parameter_count(model) / par.tp * BYTES_PER_GRADIENT
        window = stage_fwd_bwd_s
    else:
        unit_bytes = par.dp_bucket_mb * 1e6
        window = stage_fwd_bwd_s * 2.0 / 3.0
    last_unit = dp_s * min(1.0, unit_bytes / grad_bytes)
    return max(last_unit, dp_s - window)


def bubble_frac(par: ParallelSpec, model: ModelSpec | None = None) -> float:
    """Pipeline bubble over the slowest stage's busy time for the job's schedule."""
    v = virtual_stages(model, par) if model is not None else max(par.virtual_stages, 1)
    return pipeline.bubble_frac(par.schedule, par.pp, par.micro_batches, v)


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
        see :func:`pace_factor`.  Stage work and bubble stretch by ``1/pace``.

    Returns
    -------
    StepResult
        ``breakdown_s`` has ``compute, stage_imbalance, tp_comm, pp_comm, dp_comm,
        cp_comm, ep_comm, bubble, throttle_loss`` in seconds; they sum to ``step_time_s``.
        ``compute`` is the mean stage's busy time (``ops_s`` splits it into ``gemm,
        attention, elementwise, optimizer``); ``stage_imbalance`` is the wait for the
        slowest stage.
    """
    validate(model, par, hw)
    if not 0.0 < pace_factor_frac <= 1.0:
        raise TrainingConfigError(f"pace_factor_frac must be in (0, 1], got {pace_factor_frac}")
    factors = factors or FabricFactors()
    n, m = par.n_gpus, par.micro_batches
    clock = clock_frac(hw)
    dev = device(hw, clock)
    v = virtual_stages(model, par)
    layers = pipeline.stage_layers(model.layers, par.pp, par.first_stage_layers, par.last_stage_layers)
    comm = communication_s(model, par, hw, factors)
    pp = par.pp
    gemm, attention, elementwise, stage = _stage_times(model, par, hw, dev, layers, comm)
    slowest = max(stage)
    mean_stage = sum(stage) / pp
    mean_layers = model.layers / pp

    ops_s = {
        "gemm": m * sum(gemm) / pp,
        "attention": m * sum(attention) / pp,
        "elementwise": m * sum(elementwise) / pp,
        "optimizer": _optimizer_s(model, par, dev),
    }
    compute_s = sum(ops_s.values())
    frac = pipeline.bubble_frac(par.schedule, par.pp, m, v)
    dp_s = dp_exposed_s(comm["dp"], model, par, slowest)
    breakdown = _breakdown_s(compute_s, m, slowest, mean_stage, frac, mean_layers, comm, dp_s, pace_factor_frac)
    throttle_s = breakdown["throttle_loss"]
    step_s = float(sum(breakdown.values()))
    model_flops = model_flops_per_sequence(model) * par.global_batch
    hw_flops = model_flops + recompute_flops_per_sequence(model, par.recompute) * par.global_batch
    tokens_per_s = par.global_batch * model.seq_len / step_s
    tflops = model_flops / (n * step_s) / 1e12
    gpu_power_w, site_power_w = _step_power_w(hw, n, (compute_s + throttle_s) / step_s)
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
        ops_s=ops_s,
        stage_layers=list(layers),
        stage_time_s=stage,
        schedule=par.schedule if par.pp > 1 else "none",
        virtual_stages=v,
        bubble_frac=frac,
        dp_overlap_frac=0.0 if comm["dp"] <= 0 else 1.0 - dp_s / comm["dp"],
        clock_frac=clock,
    )


def _breakdown_s(
    compute_s: float,
    m: int,
    slowest_s: float,
    mean_stage_s: float,
    bubble_frac: float,
    mean_layers: float,
    comm: dict[str, Any],
    dp_s: float,
    pace_factor_frac: float,
) -> dict[str, float]:
    """The step's parts [s]: compute, the wait for the slowest stage, exposed communication per
    dimension, the pipeline bubble, and what a slower pace adds to the busy parts."""
    bubble_s = bubble_frac * m * slowest_s
    imbalance_s = m * (slowest_s - mean_stage_s)
    return {
        "compute": compute_s,
        "stage_imbalance": imbalance_s,
        "tp_comm": m * mean_layers * comm["tp_layer"],
        "pp_comm": comm["pp"],
        "dp_comm": dp_s,
        "cp_comm": m * mean_layers * comm["cp_layer"],
        "ep_comm": m * mean_layers * comm["ep_layer"],
        "bubble": bubble_s,
        "throttle_loss": (compute_s + imbalance_s + bubble_s) * (1.0 / pace_factor_frac - 1.0),
    }


def _optimizer_s(model: ModelSpec, par: ParallelSpec, dev: opcost.Device) -> float:
    """Optimizer step over the gradients a GPU holds (sharded across DP·CP under FSDP) [s]."""
    held = (dense_grad_bytes(model, par) + expert_grad_bytes(model, par)) / BYTES_PER_GRADIENT
    return opcost.optimizer_s(held / (par.dp * par.cp if par.dp_mode == "fsdp" else 1.0), dev)


def _stage_times(
    model: ModelSpec,
    par: ParallelSpec,
    hw: HardwareSpec,
    dev: opcost.Device,
    layers: Sequence[int],
    comm: dict[str, Any],
) -> tuple[list[float], list[float], list[float], list[float]]:
    """Per micro-batch seconds of every pipeline stage by op class — ``(gemm, attention, elementwise,
    stage total)`` lists — with the embedding on the first stage and the output layer on the last."""
    per_layer = layer_train_s(model, par, hw, dev)
    tokens = par.micro_batch * model.seq_len / par.cp
    logits = opcost.logits_s(tokens, model.hidden, model.vocab, par.tp, dev)
    embed = opcost.embedding_s(tokens, model.hidden, par.tp, dev)
    gemm = [float(x) * per_layer["gemm"] for x in layers]
    attention = [float(x) * per_layer["attention"] for x in layers]
    elementwise = [float(x) * per_layer["elementwise"] for x in layers]
    gemm[-1] += logits["gemm"]
    elementwise[-1] += logits["elementwise"]
    elementwise[0] += embed
    coll_layer = comm["tp_layer"] + comm["cp_layer"] + comm["ep_layer"]
    stage = [gemm[i] + attention[i] + elementwise[i] + float(layers[i]) * coll_layer for i in range(par.pp)]
    return gemm, attention, elementwise, stage


def _step_power_w(hw: HardwareSpec, n_gpus: int, busy_frac: float) -> tuple[float, float]:
    """Mean GPU power over the step and the job's site power (GPUs and node base) [W]."""
    busy_w = min(hw.busy_power_w, hw.limit_w)
    gpu_power_w = hw.idle_power_w + (busy_w - hw.idle_power_w) * busy_frac
    return gpu_power_w, n_gpus * gpu_power_w + n_gpus / hw.gpus_per_node * hw.node_base_power_w


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
