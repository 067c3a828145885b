"""``clustertwin sites …`` and ``clustertwin units``: inspect and validate site files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from twin.commands.jsonout import dumps
from twin.quantities import QUANTITIES, markdown_table
from twin.site.errors import SiteError
from twin.site.load import SITES_DIR, default_job_path, load_site
from twin.site.summary import site_summary
from twin.site.tables import SiteTables
from twin.training.jobfile import JobFileError, load_job


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``sites`` and ``units`` sub-commands."""
    sites = subparsers.add_parser("sites", help="list, validate and show site files")
    sub = sites.add_subparsers(dest="sites_command", required=True, metavar="ACTION")
    sub.add_parser("list", help="list the reference sites").set_defaults(func=_list)
    validate = sub.add_parser("validate", help="check a site file; exit 1 naming the first problem")
    validate.add_argument("file", help="site file (TOML) or reference-site name")
    validate.set_defaults(func=_validate)
    show = sub.add_parser("show", help="counts and rated power of a site")
    show.add_argument("name", help="reference-site name (colossus, demo) or site file path")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(func=_show)
    generate = sub.add_parser(
        "generate",
        help="write a site of several campuses like a reference site (e.g. 1M GPUs)",
        description="Write a site file of N copies of a site, each campus with its own names (C01-, C02-, …), "
        "grid, generators, power chain and cooling plant, e.g. ten colossus-class campuses: "
        "clustertwin sites generate --campuses 10 --like colossus colossus-x10.toml",
    )
    generate.add_argument("out", help="site file to write (TOML); refuses to overwrite an existing file")
    generate.add_argument("--campuses", type=int, default=10, help="number of campuses, 1..20 (default: 10)")
    generate.add_argument("--like", default="colossus", help="reference-site name or site file (default: colossus)")
    generate.add_argument("--name", default=None, help="site name (default: <like>-x<campuses>)")
    generate.set_defaults(func=_generate)
    units = subparsers.add_parser("units", help="print the canonical quantity names and units")
    units.add_argument("--markdown", action="store_true", help="as the Markdown table in README.md")
    units.add_argument("--json", action="store_true", help="print JSON")
    units.set_defaults(func=_units)


def _list(args: argparse.Namespace) -> int:
    for path in sorted(SITES_DIR.glob("*.toml")):
        print(path.stem)
    return 0


def check_default_job(state: SiteTables) -> None:
    """The site's default job parses and fits the site, as the live twin needs (raises :class:`SiteError`)."""
    if not state.default_job:
        return
    try:
        job = load_job(default_job_path(state.default_job))
    except JobFileError as exc:
        raise SiteError(state.source_file, "site", "default_job", str(exc)) from None
    if job.parallel.n_gpus > state.n_gpus:
        raise SiteError(
            state.source_file,
            "site",
            "default_job",
            f"{state.default_job!r} needs {job.parallel.n_gpus:,} GPUs, the site has {state.n_gpus:,}",
        )


def _validate(args: argparse.Namespace) -> int:
    """Everything ``serve`` checks when it loads the site; exit 1 naming the first problem."""
    try:
        state = load_site(args.file)
        check_default_job(state)
    except SiteError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{args.file}: ok ({state.n_racks} racks, {state.n_gpus} GPUs)")
    return 0


def _generate(args: argparse.Namespace) -> int:
    """Write the campuses site, load it back as ``serve`` would, and print its counts."""
    import tomli_w

    from twin.site.campuses import campuses_text
    from twin.site.load import read_site_text, site_path

    out = Path(args.out)
    if out.exists():
        print(f"error: {out} exists: not overwritten", file=sys.stderr)
        return 1
    try:
        base = load_site(args.like)
        name = args.name or f"{base.name}-x{args.campuses}"
        doc = campuses_text(read_site_text(site_path(args.like)), args.campuses, name)
        out.write_text(tomli_w.dumps(doc), encoding="utf-8")
        state = load_site(out)
        check_default_job(state)
    except SiteError as exc:
        out.unlink(missing_ok=True)
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: {out}: cannot write: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"{out}: site {state.name}, {args.campuses} campuses, {state.n_racks} racks, {state.n_gpus} GPUs")
    return 0


def _show(args: argparse.Namespace) -> int:
    summary = site_summary(load_site(args.name))
    if args.json:
        print(dumps(summary, indent=2))
        return 0
    width = max(len(k) for k in summary)
    for key, value in summary.items():
        print(f"{key:<{width}}  {value}")
    return 0


def _units(args: argparse.Namespace) -> int:
    if args.json:
        print(
            dumps(
                [
                    {"name": q.name, "unit": q.unit, "entity": q.entity, "description": q.description}
                    for q in QUANTITIES
                ],
                indent=2,
            )
        )
    elif args.markdown:
        print(markdown_table())
    else:
        for q in QUANTITIES:
            print(f"{q.name:<28} {q.unit:<8} {q.entity:<14} {q.description}")
    return 0
