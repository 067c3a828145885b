"""``clustertwin replay INCIDENT [--speed N|max] [--scenario FILE] [--calibrate FRACTION [--save-calibration]]
[--site-version N] [--heldout FRACTION] [--json]``.

Re-runs the twin over a recorded incident (:mod:`ingest.replay.replay`) and prints the
achieved speed (``speed_x``, recorded seconds per wall second) and, per signal, CV(RMSE)
and NMBE in percent.  With ``--calibrate F`` the site's uncertain parameters are fitted on
the first fraction F of the frames and ``signals`` holds the errors on the rest;
``--save-calibration`` then stores the site with the fitted ``[calibration]`` block as a
new site version in the database (``saved_site_version``).  ``--site-version N`` replays
on that stored version of the incident's site instead of the site file the bundle
carries, and ``--heldout F`` scores only the frames after the first fraction F: a saved
calibration replayed this way reproduces the held-out errors of its fit.
"""

from __future__ import annotations

import argparse
import sys

from ingest.replay.bundle import BundleError, read_bundle
from ingest.replay.library import find_incident, validate
from twin.commands.jsonout import dumps, finite_or_null


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``replay`` to the ``clustertwin`` parser."""
    p = subparsers.add_parser("replay", help="replay an incident through the twin and score it")
    p.add_argument("incident", help="incident name (see `clustertwin incidents list`) or bundle path")
    p.add_argument("--speed", default="max", help="times real time, or 'max' (default)")
    p.add_argument("--scenario", help="what-if scenario file applied on top of the recorded inputs")
    p.add_argument(
        "--calibrate",
        type=float,
        metavar="FRACTION",
        help="fit parameters on this first fraction of the frames, report errors on the rest",
    )
    p.add_argument(
        "--save-calibration",
        action="store_true",
        help="with --calibrate: store the site with the fitted parameters as a new site version",
    )
    p.add_argument("--site-version", type=int, metavar="N", help="replay on stored version N of the incident's site")
    p.add_argument(
        "--heldout",
        type=float,
        metavar="FRACTION",
        help="score only the frames after this first fraction (a calibration's held-out part)",
    )
    p.add_argument("--db", help="database of the site versions (default: $CLUSTERTWIN_DB or the embedded one)")
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


def _stored_site(args, bundle):
    """The incident's site as stored version ``args.site_version``, checked against the recording."""
    from ingest.replay.library import check_against_site
    from ingest.store.db import open_database
    from ingest.store.siteversions import site_version
    from twin.site.catalogue import load_catalogue
    from twin.site.load import build_site

    name = bundle.metadata["site_name"]
    engine = open_database(args.db)
    try:
        row = site_version(engine, name, args.site_version)
    finally:
        engine.dispose()
    if row is None:
        raise KeyError(f"--site-version {args.site_version}: no such version of site {name!r} in the database")
    text = row.content
    state = build_site(text, f"{name} version {row.version}", load_catalogue())
    check_against_site(bundle, state)
    return state, text


def _save_calibration(args, site_toml: str, base, cal) -> int:
    """Store the site with ``cal`` as a new site version in the database of ``args``; returns its number."""
    from ingest.replay.calibrate import save_calibration
    from ingest.store import audit
    from ingest.store.db import open_database

    engine = open_database(args.db)
    try:
        version = save_calibration(engine, site_toml, base, cal)
        audit.record(
            engine,
            audit.cli_user(),
            "site.calibration",
            f"site {base.name}",
            None,
            {"site_version": version, "incident": args.incident},
        )
        return version
    finally:
        engine.dispose()


def run_replay(args) -> int:
    from ingest.replay.calibrate import calibrate_incident
    from ingest.replay.replay import load_recording, replay, score
    from twin.scenario.conditions import ScenarioError
    from twin.scenario.load import load_scenario
    from twin.site.errors import SiteError

    try:
        speed = _speed(args.speed)
        if args.save_calibration and args.calibrate is None:
            raise ValueError("--save-calibration needs --calibrate FRACTION")
        if args.heldout is not None and not 0.0 < args.heldout < 1.0:
            raise ValueError(f"--heldout {args.heldout}: the fraction must lie strictly between 0 and 1")
        bundle = read_bundle(find_incident(args.incident, args.dir))
        state = validate(bundle)
        site_toml = bundle.site_toml
        if args.site_version is not None:
            state, site_toml = _stored_site(args, bundle)
        scenario = load_scenario(args.scenario, state) if args.scenario else None
        rec = load_recording(bundle, state)
        result = replay(bundle, state, speed=speed, scenario=scenario, rec=rec, site_toml=site_toml)
        out = result.as_dict()
        if args.heldout is not None:
            split = int(round(rec.n_frames * args.heldout))
            out["full_run_signals"] = out["signals"]
            out["signals"] = score(
                {k: v[0][split:] for k, v in result.series.items()},
                {k: v[1][split:] for k, v in result.series.items()},
                skip=0,
            )
        if args.calibrate is not None:
            cal, fitted, base = calibrate_incident(bundle, rec, args.calibrate, site_toml)
            out["full_run_signals"] = out["signals"]
            out["signals"] = cal["heldout_after"]
            out["calibration"] = cal
            if args.save_calibration:
                out["saved_site_version"] = _save_calibration(args, site_toml, base, fitted)
        if scenario is not None:
            out["scenario"] = scenario.name
        out["site"] = state.name
    except (KeyError, BundleError, ScenarioError, SiteError, ValueError) as exc:
        print(f"error: {str(exc).strip(chr(34))}", file=sys.stderr)
        return 1
    out = finite_or_null(out)
    if args.json:
        print(dumps(out, indent=1))
        return 0
    print(
        f"{out['incident']}: {out['frames']} frames, {out['duration_s']:.0f} s replayed in {out['wall_s']:.2f} s "
        f"({out['speed_x']:.0f}× real time, {out['gpu_ticks_per_s'] / 1e6:.1f} M GPU-ticks/s, "
        f"{out['n_ticks']} ticks of {out['tick_s']:g} s on {out['n_workers']} process(es))"
    )
    for name, m in out["signals"].items():
        cv, nmbe = m["cv_rmse"], m["nmbe"]
        print(
            f"  {name:<24} CV(RMSE) {cv if cv is None else f'{cv:6.2f}'} %   NMBE {nmbe if nmbe is None else f'{nmbe:+6.2f}'} %"
        )
    print(f"  outcome: {out['outcome']}")
    if "calibration" in out:
        psu = out["calibration"]["parameters"]["psu"]
        curve = ", ".join(f"{e:.4f} @ {x:.0%}" for x, e in zip(psu["load_points_frac"], psu["efficiency_points_frac"]))
        print(
            f"  PSU efficiency {'fitted' if psu['fitted_flag'] else 'not fitted (too few samples)'}: {curve} "
            f"({psu['n_samples']} rack-frames)"
        )
    if out.get("skipped"):
        print(f"  not carried over to the scenario's layout: {out['skipped']}")
    if "saved_site_version" in out:
        print(f"  calibrated site saved as version {out['saved_site_version']} of site {out['site']}")
    return 0
