"""GPU memory of a training layout: model states, activations with the chosen recomputation, logits.

Per GPU, on the pipeline stage that holds the most (GB = 1e9 bytes):

* **Model states** [ZeRO-2019 §3.1]: mixed-precision Adam keeps 2 B of BF16 weights, 2 B of
  BF16 gradients and 12 B of FP32 master weights and two moments per parameter, 16 B in all.
  DDP holds all of them for the ``P/(tp·pp)`` parameters of its stage (experts ``/ep`` too);
  FSDP shards gradients and optimizer state over the ``dp·cp`` replicas and keeps the
  gathered BF16 weights of its stage through forward and backward (Llama 3 does not reshard
  after the forward pass [Llama3-2024 §3.3.2]): ``2 + 14/(dp·cp)`` B.  Frozen weights (the
  model's ``trainable_frac`` below 1, e.g. LoRA) keep only their 2 B.
* **Activations** [Korthikanti-2022 §4]: per layer and micro-batch, with tensor and sequence
  parallelism dividing every tensor by ``tp`` and context parallelism the sequence by ``cp``,
  the bytes kept for the backward pass.  Attention: input, Q, K, V, the output and the
  output projection's dropout mask, ``7·s·b·h + 4·s·b·h_kv``, plus without flash attention
  the scores, softmax and dropout over ``s²``, ``5·a·s²·b``; MLP ``3·s·b·h + 4·s·b·f`` (GeLU)
  or ``3·s·b·h + 6·s·b·f`` (gated: gate, up and their product); two norms ``4·s·b·h``.  For
  ``h_kv = h``, ``f = 4h`` that is Korthikanti's ``s·b·h·(34 + 5·a·s/h)``.  Selective
  recomputation drops the ``s²`` terms; full recomputation keeps each layer's input,
  ``2·s·b·h``, and one layer's full set while it recomputes.
* **Micro-batches in flight** on the first stage: ``min(m, pp)`` under 1F1B and ZB-H1;
  interleaved, Megatron's warm-up of ``2·(pp − 1) + (v − 1)·pp`` chunks plus the one in its
  steady state (at most ``m·v``), each chunk ``1/v`` of the stage's layers
  [Megatron-SC21 §2.2.2].
* **Logits** on the last stage: BF16 logits and their FP32 softmax, ``6·s·b·V/tp``.

The estimate counts tensors as the reference implementations keep them; implementations
that free tensors early hold less, so a layout over the limit by a little may still run
(the twin warns); model states alone over the limit cannot (the twin refuses).
``MEMORY_RESERVE_FRAC`` of the HBM is left for the CUDA context, NCCL buffers and the
allocator's fragmentation [E].
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from twin.training import pipeline

if TYPE_CHECKING:
    from twin.training.steptime import HardwareSpec, ModelSpec, ParallelSpec

BYTES_MODEL_STATES_DDP = 16.0  # [ZeRO-2019 §3.1]: 2 + 2 + 12 B per parameter
BYTES_WEIGHTS_BF16 = 2.0
BYTES_SHARDED_FSDP = 14.0  # [ZeRO-2019 §3.1]: gradients (2 B) and optimizer state (12 B), sharded over the replicas
BYTES_PER_LOGIT = 6.0  # [D] BF16 logits (2 B) and their FP32 softmax (4 B) per vocabulary entry
# [E] CUDA context (~0.5–1 GB), NCCL buffers (~1–2 GB) and allocator fragmentation: 5 % of the HBM.
MEMORY_RESERVE_FRAC = 0.05
GB = 1e9


@dataclass(frozen=True)
class MemoryEstimate:
    """Per-GPU memory of the fullest stage [GB] and the verdict against the HBM."""

    model_states_gb: float
    activations_gb: float
    logits_gb: float
    total_gb: float
    hbm_gb: float
    usable_gb: float  # HBM less the reserve
    in_flight_layers_count: float  # layer activations held at the peak
    largest_model_states_gb: float = 0.0  # model states of the stage that holds the most of them

    @property
    def fits_flag(self) -> bool:
        return self.total_gb <= self.usable_gb

    @property
    def states_fit_flag(self) -> bool:
        return max(self.model_states_gb, self.largest_model_states_gb) <= self.hbm_gb


def layer_activation_bytes(model: ModelSpec, par: ParallelSpec) -> float:
    """Bytes of one layer's activations for one micro-batch on one GPU (module docstring)."""
    s, b, h, tp = model.seq_len / par.cp, float(par.micro_batch), float(model.hidden), float(par.tp)
    h_kv = h * model.kv / model.heads
    f = float(model.ffn) * model.active_experts
    attention = 7.0 * s * b * h + 4.0 * s * b * h_kv
    scores = 0.0 if par.flash_attention or par.recompute != "none" else 5.0 * model.heads * s * model.seq_len * b
    mlp = 3.0 * s * b * h + (6.0 if model.gated_mlp else 4.0) * s * b * f
    norms = 4.0 * s * b * h
    full = (attention + scores + mlp + norms) / tp
    if par.recompute == "full":
        return 2.0 * s * b * h / tp
    return full


def in_flight_chunks(par: ParallelSpec, v: int, stage: int) -> float:
    """Chunks (of ``1/v`` of a stage's layers) whose activations pipeline stage ``stage`` holds at its peak.

    1F1B and ZB-H1: ``min(m, pp − stage)`` micro-batches; interleaved: Megatron's warm-up
    ``2·(pp − stage − 1) + (v − 1)·pp`` plus one, at most ``m·v`` [Megatron-SC21 §2.2.2].
    """
    m, pp = par.micro_batches, par.pp
    if par.schedule == "interleaved" and v > 1:
        return float(min(m * v, 2 * (pp - stage - 1) + (v - 1) * pp + 1))
    return float(min(m, pp - stage))


def estimate(
    model: ModelSpec,
    par: ParallelSpec,
    hbm_gb: float,
    v: int,
    params_per_layer: float,
    expert_params_per_layer: float,
) -> MemoryEstimate:
    """Memory of the fullest stage of ``model`` under ``par`` with ``v`` chunks per stage (``v = 1`` unless interleaved)."""
    layers = pipeline.stage_layers(model.layers, par.pp, par.first_stage_layers, par.last_stage_layers)
    per_layer_params = (params_per_layer - expert_params_per_layer + expert_params_per_layer / par.ep) / par.tp
    embed = float(model.vocab) * model.hidden / par.tp  # input embedding (first stage), output layer (last)
    trained = BYTES_SHARDED_FSDP / (par.dp * par.cp) if par.dp_mode == "fsdp" else BYTES_MODEL_STATES_DDP - 2.0
    state_bytes = BYTES_WEIGHTS_BF16 + trained * model.trainable_frac  # frozen weights keep only their BF16 copy
    per_layer = layer_activation_bytes(model, par)
    working = layer_activation_bytes(model, replace(par, recompute="none")) if par.recompute == "full" else 0.0
    logits = BYTES_PER_LOGIT * model.seq_len / par.cp * par.micro_batch * model.vocab / par.tp
    chunk = 1.0 / v if par.schedule == "interleaved" and v > 1 else 1.0
    best, largest_states = (-1.0, 0.0, 0.0, 0.0, 0.0), 0.0
    for i, n_layers in enumerate(layers):
        params = n_layers * per_layer_params + embed * ((i == 0) + (i == len(layers) - 1))
        held_layers = in_flight_chunks(par, v, i) * chunk * n_layers
        acts = held_layers * per_layer + working
        out = logits if i == len(layers) - 1 else 0.0
        total = params * state_bytes + acts + out
        largest_states = max(largest_states, params * state_bytes)
        if total > best[0]:
            best = (total, params * state_bytes, acts, out, held_layers)
    total, states, acts, out, held_layers = best
    return MemoryEstimate(
        model_states_gb=states / GB,
        activations_gb=acts / GB,
        logits_gb=out / GB,
        total_gb=total / GB,
        hbm_gb=hbm_gb,
        usable_gb=hbm_gb * (1.0 - MEMORY_RESERVE_FRAC),
        in_flight_layers_count=held_layers,
        largest_model_states_gb=largest_states / GB,
    )


def job_memory(model: ModelSpec, par: ParallelSpec, hw: HardwareSpec) -> MemoryEstimate:
    """:func:`estimate` for a :class:`twin.training.steptime.ModelSpec`, ``ParallelSpec`` and ``HardwareSpec``."""
    from twin.training import steptime

    experts = steptime.expert_parameter_count(model) if model.moe else 0.0
    return estimate(
        model,
        par,
        hw.hbm_gb,
        steptime.virtual_stages(model, par),
        steptime.layer_parameter_count(model),
        experts,
    )


def report_fields(est: MemoryEstimate) -> dict[str, float]:
    """The estimate as report fields (names in :mod:`twin.quantities`)."""
    return {
        "memory_model_states_gb": est.model_states_gb,
        "memory_activations_gb": est.activations_gb,
        "memory_logits_gb": est.logits_gb,
        "memory_total_gb": est.total_gb,
        "hbm_usable_gb": est.usable_gb,
        "memory_fits_flag": int(est.fits_flag),
    }


def warning(est: MemoryEstimate) -> str | None:
    """One line when the estimate exceeds the usable HBM, else None."""
    if est.fits_flag:
        return None
    return (
        f"the layout needs about {est.total_gb:.1f} GB per GPU on its fullest stage (model states "
        f"{est.model_states_gb:.1f}, activations {est.activations_gb:.1f} for {est.in_flight_layers_count:.0f} "
        f"layers in flight, logits {est.logits_gb:.1f}), more than the {est.usable_gb:.1f} GB usable of "
        f"{est.hbm_gb:.0f} GB"
    )
