"""``dpcert demo``: the README's main job."""

from __future__ import annotations

import argparse
import json
import sys
import time

from dpcert import provenance
from dpcert.cli._common import EXIT_OK, CommandGroups, output_directory, seed
from dpcert.reproductions.demo import FILE, run_demo


def register(groups: CommandGroups) -> None:
    parser = groups.add(None, "demo", _demo)
    parser.add_argument(
        "--out",
        type=output_directory,
        default="dpcert-demo",
        help="directory for the demo's files (default ./dpcert-demo)",
    )
    parser.add_argument("--seed", type=seed, default=2026)


def _print_line(line: str) -> None:
    sys.stdout.write(line + "\n")


def _demo(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    echo = None if args.json else _print_line
    with provenance.command_line(getattr(args, "argv", ["dpcert", "demo"])):
        results = run_demo(args.out, seed=args.seed, echo=echo)
    seconds = time.perf_counter() - start
    if args.json:
        record = provenance.read_json(args.out / FILE)
        payload = {"steps": results, "seconds": seconds, "out": str(args.out), provenance.KEY: record}
        sys.stdout.write(json.dumps(payload) + "\n")
    else:
        sys.stdout.write(f"done in {seconds:.1f} s; files in {args.out}/\n")
    return EXIT_OK
