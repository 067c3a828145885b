"""``clustertwin sites …`` and ``clustertwin units``: inspect and validate site files."""

from __future__ import annotations

import json
import sys

from twin.site.catalogue import load_catalogue
from twin.site.errors import SiteError
from twin.quantities import markdown_table
from twin.site.load import SITES_DIR, load_site
from twin.site.summary import site_summary


def register(subparsers) -> None:
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
    units = subparsers.add_parser("units", help="print the canonical quantity names and units")
    units.add_argument("--markdown", action="store_true", help="as the Markdown table in README.md")
    units.set_defaults(func=_units)


def _list(args) -> int:
    for path in sorted(SITES_DIR.glob("*.toml")):
        print(path.stem)
    return 0


def _load(name):
    try:
        load_catalogue()
        return load_site(name)
    except SiteError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None


def _validate(args) -> int:
    state = _load(args.file)
    if state is None:
        return 1
    print(f"{args.file}: ok ({state.n_racks} racks, {state.n_gpus} GPUs)")
    return 0


def _show(args) -> int:
    state = _load(args.name)
    if state is None:
        return 1
    summary = site_summary(state)
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    width = max(len(k) for k in summary)
    for key, value in summary.items():
        print(f"{key:<{width}}  {value}")
    return 0


def _units(args) -> int:
    if args.markdown:
        print(markdown_table())
    else:
        from twin.quantities import QUANTITIES
        for q in QUANTITIES:
            print(f"{q.name:<28} {q.unit:<8} {q.entity:<14} {q.description}")
    return 0
