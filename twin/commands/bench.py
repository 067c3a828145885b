"""``clustertwin bench``: run the registered benchmarks and print their figures."""

from __future__ import annotations

import argparse
import inspect
import time

from twin.bench import registry
from twin.commands.jsonout import dumps
from twin.errors import InputError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``bench`` sub-command."""
    bench = subparsers.add_parser("bench", help="run the performance benchmarks")
    bench.add_argument("--json", action="store_true", help="print one JSON object")
    bench.add_argument("--only", nargs="+", metavar="NAME", help="run only these benchmarks")
    bench.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    bench.add_argument(
        "--port", type=int, help="TCP port of a benchmark's server (load_dashboards; default: a free one)"
    )
    bench.add_argument("--seconds", type=int, help="length of a benchmark's loaded run (load_dashboards; default 90)")
    bench.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    benches = registry()
    if args.list:
        print("\n".join(sorted(benches)))
        return 0
    names = args.only or sorted(benches)
    unknown = [n for n in names if n not in benches]
    if unknown:
        raise InputError(f"unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(sorted(benches))}")
    options = {k: v for k, v in (("port", args.port), ("seconds", args.seconds)) if v is not None}
    for option in options:
        if not any(option in inspect.signature(benches[n]).parameters for n in names):
            raise InputError(f"--{option} applies to none of {', '.join(names)}")
    results = {}
    for name in names:
        start = time.perf_counter()
        accepted = inspect.signature(benches[name]).parameters
        results[name] = benches[name](**{k: v for k, v in options.items() if k in accepted})
        results[name]["bench_wall_s"] = round(time.perf_counter() - start, 2)
        if not args.json:
            print(f"[{name}]")
            for key, value in results[name].items():
                print(f"  {key:<40} {value:.4g}" if isinstance(value, float) else f"  {key:<40} {value}")
    if args.json:
        print(dumps(results, indent=2))
    return 0
