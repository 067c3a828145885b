"""``clustertwin ingest run``: the live twin as its own process (no web server)."""

from __future__ import annotations

import json
import logging
import signal
import sys
import threading

from twin.site.errors import SiteError

log = logging.getLogger(__name__)


def add_run_parser(ingest_subparsers) -> None:
    """Add ``run`` under the ``ingest`` sub-command."""
    run = ingest_subparsers.add_parser(
        "run",
        help="run the live twin (ingest, twin tick, storage, alerts) until stopped",
        description="Run the live twin of a site without the web server. Several processes can "
        "share one PostgreSQL database, each with its own --shard i/n; the leader of shard 0 "
        "publishes each tick's live state, which 'clustertwin serve --follow' web processes show "
        "(docs/deploy.md). A second process of the same shard waits as a standby.",
    )
    run.add_argument("--site", default="colossus", help="reference-site name or site file (default: colossus)")
    run.add_argument("--db", default=None, help="database URL (default: $CLUSTERTWIN_DB or var/clustertwin.db)")
    run.add_argument(
        "--source",
        action="append",
        default=None,
        metavar="SPEC",
        help="'synthetic' or KIND=TARGET[#HOST] with KIND dcgm, prometheus, redfish, ipmi or slurm; "
        "repeatable (default: synthetic)",
    )
    run.add_argument("--shard", default="0/1", help="this process's shard i/n of the frame blocks (default: 0/1)")
    run.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="SPEC",
        help="inject a fault into the synthetic stream: KIND:TARGET[@START_S][+DURATION_S][=VALUE]",
    )
    run.add_argument("--seed", type=int, default=0, help="seed of the synthetic stream (default: 0)")
    run.add_argument("--job", default=None, help="job file name in data/jobs/ (default: the site's default_job)")
    run.add_argument("--tick-s", type=float, default=1.0, help="seconds between twin ticks (default: 1)")
    run.add_argument(
        "--record-every-s", type=float, default=5.0, help="seconds between stored full-site frames (default: 5)"
    )
    run.add_argument(
        "--publish-every-s",
        type=float,
        default=1.0,
        help="seconds between live states published for followers, 1..60 (default: 1, every tick; "
        "a 1M-GPU site's state is 4.4 MB)",
    )
    run.add_argument("--retention-h", type=float, default=1.0, help="hours of frames kept (default: 1)")
    run.add_argument("--duration-s", type=float, default=None, help="stop after this many seconds (default: run)")
    run.set_defaults(func=_run)


def _run(args) -> int:
    # the live runtime (pandas and the whole ingest stack) is imported only when it runs, not for
    # every clustertwin command that builds the parser
    from ingest.live.runtime import LiveSetupError, start_hub
    from ingest.synthetic.faults import FaultError

    if not 1.0 <= args.publish_every_s <= 60.0:
        print(f"error: --publish-every-s {args.publish_every_s:g}: expected 1..60 s", file=sys.stderr)
        return 2
    try:
        runtime = start_hub(
            args.site,
            args.db,
            tuple(args.source or ("synthetic",)),
            shard=args.shard,
            tick_s=args.tick_s,
            faults=tuple(args.fault),
            seed=args.seed,
            job=args.job,
            record_every_s=args.record_every_s,
            retention_s=args.retention_h * 3600.0,
            publish_every_s=args.publish_every_s,
        )
    except (SiteError, FaultError, LiveSetupError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not runtime.leading:  # a standby: the lease thread takes ingest over when the leader stops
        print(f"standby: {runtime.notes[0]}", file=sys.stderr)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait(args.duration_s)
    snap = runtime.hub.view.latest()
    runtime.stop()
    print(
        json.dumps(
            {
                "site": runtime.hub.site_name,
                "last_tick": snap.ts.isoformat() if snap else None,
                "it_power_mw": snap.it_power_mw if snap else None,
                "active_alerts": len(runtime.hub.view.alerts()),
            }
        )
    )
    return 0
