"""Hall shards of a replay ticked in parallel worker processes (forked, results sent back once at the end).

The machine's cores are the limit: one shard runs in the calling process and each other
shard in a forked child, which inherits the recording and the shard's tables (nothing is
copied up front) and sends its per-frame signals back through a pipe when it is done.
Shards are cached per site content, so repeated replays of one site (calibration trials)
cut it once.
"""

from __future__ import annotations

import multiprocessing
import os
import traceback

from ingest.replay.shards import Shard, hall_shards, with_specs_of
from ingest.replay.ticking import ShardRun, run_shard
from twin.cache import BoundedCache
from twin.site.calibration import without_block
from twin.site.tables import SiteTables

MIN_GPUS_PER_WORKER = 20_000  # below this a second process costs more than it saves
MAX_WORKERS = 8


def default_workers(state: SiteTables) -> int:
    """Processes worth using for ``state``: one per core, at most one per 20k GPUs (1 without fork)."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, MAX_WORKERS, state.n_gpus // MIN_GPUS_PER_WORKER))


_cuts: BoundedCache[list[Shard] | None] = BoundedCache(4)  # (site text without calibration, n) → the cut


def cached_shards(state: SiteTables, site_toml: str, n: int) -> list[Shard] | None:
    """:func:`ingest.replay.shards.hall_shards` cut once per site content and ``n``, with ``state``'s catalogue entries.

    ``state`` is the site built from ``site_toml``, possibly with other calibrated parameters
    (the cut does not depend on them).
    """
    shards = _cuts.get_or_make((without_block(site_toml), n), lambda: hall_shards(state, site_toml, n))
    return None if shards is None else [with_specs_of(state, shard) for shard in shards]


def _child(conn, run: ShardRun, inputs, frames: range) -> None:
    try:
        conn.send(("ok", run_shard(run, inputs, frames)))
    except BaseException:  # noqa: BLE001 - reported to the parent, which raises it
        conn.send(("error", traceback.format_exc(limit=5)))
    finally:
        conn.close()


def run_parallel(runs: list[ShardRun], inputs, frames: range) -> list[dict]:
    """:func:`ingest.replay.ticking.run_shard` of every run, the first here and the others in forked children."""
    ctx = multiprocessing.get_context("fork")
    children = []
    for run in runs[1:]:
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(send, run, inputs, frames), daemon=True)
        proc.start()
        send.close()
        children.append((proc, recv))
    try:
        parts = [run_shard(runs[0], inputs, frames)]
        for proc, recv in children:
            try:
                status, payload = recv.recv()
            except EOFError:
                raise RuntimeError(
                    f"replay worker {proc.pid} ended without a result (exit code {proc.exitcode})"
                ) from None
            if status != "ok":
                raise RuntimeError(f"replay worker failed:\n{payload}")
            parts.append(payload)
        return parts
    finally:
        for proc, recv in children:
            recv.close()
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
