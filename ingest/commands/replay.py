"""``clustertwin replay INCIDENT [--speed N|max] [--scenario FILE] [--calibrate FRACTION] [--json]``.

Re-runs the twin over a recorded incident (:mod:`ingest.replay.replay`) and prints the
achieved speed (``speed_x``, recorded seconds per wall second) and, per signal, CV(RMSE)
and NMBE in percent.  With ``--calibrate F`` the site's uncertain parameters are fitted on
the first fraction F of the frames and ``signals`` holds the errors on the rest.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from ingest.replay.bundle import BundleError, read_bundle
from ingest.replay.library import find_incident, validate


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``replay`` to the ``clustertwin`` parser."""
    p = subparsers.add_parser("replay", help="replay an incident through the twin and score it")
    p.add_argument("incident", help="incident name (see `clustertwin incidents list`) or bundle path")
    p.add_argument("--speed", default="max", help="times real time, or 'max' (default)")
    p.add_argument("--scenario", help="what-if scenario file applied on top of the recorded inputs")
    p.add_argument("--calibrate", type=float, metavar="FRACTION",
                   help="fit parameters on this first fraction of the frames, report errors on the rest")
    p.add_argument("--dir", help="the user's incident directory (default $CLUSTERTWIN_INCIDENTS or var/incidents)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run_replay)


def _speed(text: str) -> float | None:
    if text == "max":
        return None
    value = float(text)
    if not value > 0:
        raise ValueError("--speed must be a positive number or 'max'")
    return value


def _clean(obj):
    if isinstance(obj, float):
        return None if math.isnan(obj) else obj
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    return obj


def run_replay(args) -> int:
    from ingest.replay.replay import load_recording, replay
    from twin.site.scenario import ScenarioError, load_scenario

    try:
        speed = _speed(args.speed)
        bundle = read_bundle(find_incident(args.incident, args.dir))
        state = validate(bundle)
        scenario = load_scenario(args.scenario, state) if args.scenario else None
        if scenario is not None and scenario.state is not None:
            raise ScenarioError(f"{args.scenario}: edits that change the layout cannot replay a recording of "
                                "the site as built; use failures, caps, setpoints and weather")
        rec = load_recording(bundle, state)
        result = replay(bundle, state, speed=speed, scenario=scenario, rec=rec)
        out = result.as_dict()
        if args.calibrate is not None:
            from ingest.replay.calibrate import calibrate_and_score

            cal = calibrate_and_score(state, rec, args.calibrate)
            cal.pop("calibration")
            out["full_run_signals"] = out["signals"]
            out["signals"] = cal["heldout_after"]
            out["calibration"] = cal
        if scenario is not None:
            out["scenario"] = scenario.name
    except (KeyError, BundleError, ScenarioError, ValueError) as exc:
        print(f"error: {str(exc).strip(chr(34))}", file=sys.stderr)
        return 1
    out = _clean(out)
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"{out['incident']}: {out['frames']} frames, {out['duration_s']:.0f} s replayed in {out['wall_s']:.2f} s "
          f"({out['speed_x']:.0f}× real time, {out['gpu_ticks_per_s'] / 1e6:.1f} M GPU-ticks/s)")
    for name, m in out["signals"].items():
        cv, nmbe = m["cv_rmse"], m["nmbe"]
        print(f"  {name:<24} CV(RMSE) {cv if cv is None else f'{cv:6.2f}'} %   NMBE {nmbe if nmbe is None else f'{nmbe:+6.2f}'} %")
    print(f"  outcome: {out['outcome']}")
    return 0
