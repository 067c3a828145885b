"""Pipeline-parallel stages and schedules: layers per stage and the bubble of each schedule.

Bubble fractions, as idle time over the slowest stage's busy time, with ``p`` stages,
``m`` micro-batches per step and ``v`` model chunks per stage:

* ``1f1b`` (PipeDream-Flush / Megatron default without interleaving): ``(p − 1)/m``
  (Narayanan et al., SC'21, arXiv:2104.04473 §2.2.1).
* ``interleaved`` (Megatron interleaved 1F1B): ``(p − 1)/(v·m)`` (same paper §2.2.2).
  Llama 3 405B used an interleaved schedule (Dubey et al., arXiv:2407.21783 §3.3.2).
* ``zero_bubble`` (ZB-H1 of Qi et al., "Zero Bubble Pipeline Parallelism", ICLR'24,
  arXiv:2401.10241): splitting the backward pass into input- and weight-gradient halves
  lets the weight half fill the bubble, leaving ``(p − 1)/(3m)`` when forward, input
  backward and weight backward take equal time; ZB-H1 keeps 1F1B's activation memory.

The default schedule is ``interleaved`` with ``v = 2`` chunks per stage when the layout
allows it (``m`` divisible by ``p`` and at least one layer per chunk), else ``1f1b``:
large pipeline-parallel jobs run interleaved schedules today (Llama 3 §3.3.2; NeMo's
Llama 3 70B recipe uses PP 8 with 5 virtual stages), and ``v = 2`` is the most
conservative interleaved setting.

Stages are uneven when the layers do not divide: the first and last stages, which also
hold the input embedding and the output layer, take the smaller share (Llama 3
§3.3.2: "we reduce one Transformer layer each from the first and the last stages").
"""

from __future__ import annotations

import functools

SCHEDULES = ("1f1b", "interleaved", "zero_bubble")
DEFAULT_SCHEDULE = "interleaved"
DEFAULT_VIRTUAL_STAGES = 2
# ZB-H1 keeps a third of the 1F1B bubble (arXiv:2401.10241 §3).
ZERO_BUBBLE_FRACTION_OF_1F1B = 1.0 / 3.0


def resolve_virtual_stages(schedule: str, requested: int, pp: int, micro_batches: int, layers: int) -> int:
    """Chunks per stage actually used: ``requested`` if set (> 0), else the documented default."""
    if schedule != "interleaved" or pp == 1:
        return 1
    if requested > 0:
        return requested
    fits = micro_batches % pp == 0 and layers >= pp * DEFAULT_VIRTUAL_STAGES
    return DEFAULT_VIRTUAL_STAGES if fits else 1


@functools.lru_cache(maxsize=1024)
def stage_layers(layers: int, pp: int, first: int = -1, last: int = -1) -> tuple[int, ...]:
    """Layers on each of the ``pp`` stages (summing to ``layers``).

    ``first``/``last`` (>= 0) fix the first and last stages' layers; the rest are spread
    as evenly as possible.  By default the remainder of ``layers / pp`` goes to the
    middle stages, so the end stages (embedding, output layer) hold the smaller share.
    """
    if pp == 1:
        return (layers,)
    out = [0] * pp
    fixed = {0: first, pp - 1: last}
    free = [i for i in range(pp) if fixed.get(i, -1) < 0]
    remaining = layers - sum(v for v in fixed.values() if v >= 0)
    for i, v in fixed.items():
        if v >= 0:
            out[i] = v
    if free:
        q, r = divmod(remaining, len(free))
        middle_first = [i for i in free if i not in (0, pp - 1)] + [i for i in free if i in (0, pp - 1)]
        for k, i in enumerate(middle_first):
            out[i] = q + (1 if k < r else 0)
    return tuple(out)


def bubble_frac(schedule: str, pp: int, micro_batches: int, virtual_stages: int = 1) -> float:
    """Idle fraction of the slowest stage's busy time for ``schedule`` (module docstring)."""
    base = (pp - 1) / micro_batches
    if schedule == "1f1b":
        return base
    if schedule == "interleaved":
        return base / virtual_stages
    if schedule == "zero_bubble":
        return base * ZERO_BUBBLE_FRACTION_OF_1F1B
    raise ValueError(f"parallel.schedule must be one of {SCHEDULES}, got {schedule!r}")
