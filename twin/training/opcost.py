"""Per-operation cost of a transformer layer on one GPU: GEMM rooflines and memory-bound work.

Every GEMM is costed on its own shape (Williams et al., "Roofline", CACM 52(4), 2009):
``t = max(2·M·N·K / rate, bytes / hbm_bandwidth)`` with ``bytes = 2·(M·K + K·N + M·N)``
(BF16 operands and result) and ``rate = peak · gemm_efficiency · clock_frac · n/(n + TILE)``,
``n = min(M, N, K)`` the narrowest dimension: edge-tile and wave-quantisation losses of
the cuBLAS tiles grow as a dimension shrinks towards the tile width [E].  ``M`` is the
tokens of one micro-batch on the rank (``b·s/cp``); ``N`` and ``K`` are the weight
dimensions after tensor parallelism.

Attention is causal (decoder-only models): with flash attention the kernel skips the key
blocks wholly above the diagonal, so of ``n²`` score tiles (``n = ⌈s / ATTENTION_BLOCK⌉``) it
computes ``n(n+1)/2`` [FlashAttention2-2023 §3.1.1]; with context parallelism the sequence is
split in ``2·cp`` chunks, rank ``i`` holding chunks ``i`` and ``2·cp − 1 − i`` [Llama3-2024
§3.3.2], so every rank does the same share of that work.  Without flash attention the score
GEMMs run over the whole ``s × s`` matrix and the mask is applied afterwards (Megatron-LM's
fused scale-mask-softmax), so nothing is skipped.  FLOP counts (MFU) keep the full ``s²``
term, as Megatron's formula does; the mask saves time, not counted FLOPs.

Work that is not a GEMM moves bytes and does few FLOPs, so it runs at HBM bandwidth:
layer norms, residual adds and dropout (on ``T/tp`` tokens with sequence parallelism),
the MLP activation, the unfused softmax/dropout over the ``s²`` attention scores when
flash attention is off, the logit cross-entropy and the optimizer step.  Byte counts per
element are listed beside each constant; they are counted from the kernels' reads and
writes, not fitted.  Backward work is taken as twice the forward work (two GEMMs per
forward GEMM; each element-wise kernel's backward reads and writes about twice as much).

All times are seconds per micro-batch on one GPU; forward only unless the name says so.
"""

from __future__ import annotations

from dataclasses import dataclass

BYTES_BF16 = 2.0
# [E] edge-tile width of the GEMM model: Hopper/Ampere cuBLAS tiles are 64–256 wide.
TILE_WIDTH = 128.0
# FlashAttention-2 block (tile) size along the sequence: 128 [FlashAttention2-2023 §3.3].
ATTENTION_BLOCK = 128.0
# Element-wise bytes per token and hidden unit in one layer's forward pass (BF16, 2 B/elt):
# two norms (read + write: 2 elements each) and two residual adds with dropout (read 2,
# write 1 each) → 4 + 6 = 10 elements per hidden unit.
NORM_RESIDUAL_ELEMENTS_PER_HIDDEN = 10.0
# MLP activation per FFN unit: GeLU reads 1 and writes 1; SwiGLU reads 2 (gate, up) writes 1.
ACTIVATION_ELEMENTS_PER_FFN = {False: 2.0, True: 3.0}
# Unfused attention (no flash attention), bytes per score element in the forward pass
# beyond the two GEMMs' own reads and writes: fused scale-mask-softmax reads 2 B and
# writes 2 B, dropout reads 2 B, writes 2 B and a 1 B mask → 9 B.
SOFTMAX_BYTES_PER_SCORE = 9.0
# Cross-entropy over the logits, forward and backward together: FP32 (4 B) read for the
# max/sum, read again for the loss and written as the gradient → 12 B per logit.
LOGIT_LOSS_BYTES_PER_ELEMENT = 12.0
# Mixed-precision Adam per parameter held (Megatron layout): read FP32 master, both
# moments and the FP32 main gradient (16 B), write master and moments (12 B) and the
# BF16 working copy (2 B) → 30 B.
OPTIMIZER_BYTES_PER_PARAM = 30.0


@dataclass(frozen=True)
class Device:
    """What a GPU sustains: compute [FLOP/s at efficiency and clock] and HBM [B/s]."""

    flops_per_s: float  # peak · gemm_efficiency · clock_frac (before the tile factor)
    hbm_bytes_per_s: float


def causal_block_frac(seq_len: float) -> float:
    """Share of the ``s × s`` score tiles a causal flash-attention kernel computes: ``(n + 1) / (2n)``."""
    n = max(1.0, -(-float(seq_len) // ATTENTION_BLOCK))
    return (n + 1.0) / (2.0 * n)


def gemm_s(m: float, n: float, k: float, dev: Device, count: float = 1.0) -> float:
    """Roofline time of ``count`` GEMMs of shape ``(M×K)·(K×N)`` [s] (module docstring)."""
    narrow = min(m, n, k)
    rate = dev.flops_per_s * narrow / (narrow + TILE_WIDTH)
    flops = 2.0 * m * n * k * count
    bytes_moved = BYTES_BF16 * (m * k + k * n + m * n) * count
    return max(flops / rate, bytes_moved / dev.hbm_bytes_per_s)


@dataclass(frozen=True)
class LayerShape:
    """One layer as a TP rank sees it for one micro-batch."""

    tokens: float  # b·s/cp
    seq_len: float  # full sequence (keys and values after the CP all-gather)
    hidden: float
    kv_hidden: float  # hidden·kv_heads/heads
    ffn: float
    heads: float
    tp: float
    micro_batch: float
    gated_mlp: bool
    experts: float = 1.0  # MLP experts in the layer (1 = dense)
    experts_per_token: float = 1.0  # top-k routing
    ep: float = 1.0  # expert-parallel ranks sharing the experts


def layer_forward_s(shape: LayerShape, dev: Device, flash_attention: bool) -> dict[str, float]:
    """Forward seconds of one layer per micro-batch, by op class.

    ``gemm``: QKV, output projection and MLP GEMMs; ``attention``: the two score GEMMs
    (``QKᵀ`` and ``softmax·V`` per head, ``K`` or ``N`` = head dim; with flash attention only
    the causal blocks, :func:`causal_block_frac`) plus, without flash attention, the softmax
    and dropout traffic over the materialised scores;
    ``elementwise``: norms, residuals and the MLP activation at HBM bandwidth.
    """
    t, s, h, tp = shape.tokens, shape.seq_len, shape.hidden, shape.tp
    mlp_up_n = shape.ffn / tp * (2.0 if shape.gated_mlp else 1.0)
    # a rank's E/ep local experts share the T·k routed tokens evenly (balanced routing)
    local_experts = shape.experts / shape.ep
    expert_tokens = t * shape.experts_per_token / local_experts
    gemm = (
        gemm_s(t, (h + 2.0 * shape.kv_hidden) / tp, h, dev)
        + gemm_s(t, h, h / tp, dev)
        + gemm_s(expert_tokens, mlp_up_n, h, dev, local_experts)
        + gemm_s(expert_tokens, h, shape.ffn / tp, dev, local_experts)
    )
    if shape.experts > 1:
        gemm += gemm_s(t, shape.experts, h, dev)  # router
    head_dim = h / shape.heads
    q_rows = t / shape.micro_batch  # query rows per sequence on this rank
    heads_local = shape.heads / tp * shape.micro_batch
    if flash_attention:
        flops = 4.0 * q_rows * s * head_dim * heads_local * causal_block_frac(s)
        attention = flops / (dev.flops_per_s * head_dim / (head_dim + TILE_WIDTH))
    else:
        attention = gemm_s(q_rows, s, head_dim, dev, heads_local) + gemm_s(q_rows, head_dim, s, dev, heads_local)
        attention += SOFTMAX_BYTES_PER_SCORE * q_rows * s * heads_local / dev.hbm_bytes_per_s
    act = ACTIVATION_ELEMENTS_PER_FFN[shape.gated_mlp] * shape.ffn * shape.experts_per_token
    elements = (NORM_RESIDUAL_ELEMENTS_PER_HIDDEN * h + act) * t / tp
    return {"gemm": gemm, "attention": attention, "elementwise": BYTES_BF16 * elements / dev.hbm_bytes_per_s}


def logits_s(tokens: float, hidden: float, vocab: float, tp: float, dev: Device) -> dict[str, float]:
    """Forward + backward seconds of the output layer and its loss per micro-batch."""
    gemm = 3.0 * gemm_s(tokens, vocab / tp, hidden, dev)
    loss = LOGIT_LOSS_BYTES_PER_ELEMENT * tokens * vocab / tp / dev.hbm_bytes_per_s
    return {"gemm": gemm, "elementwise": loss}


def embedding_s(tokens: float, hidden: float, tp: float, dev: Device) -> float:
    """Forward + backward seconds of the input embedding (gather, then scatter-add of gradients)."""
    return 3.0 * 2.0 * BYTES_BF16 * tokens * hidden / tp / dev.hbm_bytes_per_s


def optimizer_s(params_held: float, dev: Device) -> float:
    """Seconds of one Adam step over the ``params_held`` parameters this GPU updates."""
    return OPTIMIZER_BYTES_PER_PARAM * params_held / dev.hbm_bytes_per_s
