"""Power per draw of the classifier search against the plain Clopper–Pearson threshold search, on the
StatDP / DP-Sniper / CheckDP benchmark mechanisms (:mod:`dpcert.audits.benchmark_mechanisms`).

For every mechanism, draw count and seed, both searches audit the claimed ε on the input pairs those
tools used (their relation: ALL_DIFFER = linf, ONE_DIFFER = one-differ), at confidence 0.95
(``--confidence 0.9`` is DP-Sniper's, for a comparison with its published bounds at its own level):

* ``classifier`` — :class:`dpcert.audits.ClassifierSearch` (successive halving, learned event,
  streamed evaluation);
* ``threshold`` — the existing default: :class:`dpcert.audits.CandidatePairs` screened evenly, the
  best pair audited with the rejection set chosen on a held-out selection half (thresholds on
  features, cells of small supports).

Buggy mechanisms: how many seeds report "violated" (caught), the median and largest bound; correct
ones: false alarms over the seeds (at α = 0.05) and the largest bound (never above the true ε).  Speed:
draws per second (all draws on both inputs, screening included, divided by the audit's wall time) and
the median time to the verdict.  Prints a markdown section.

Run as ``python benchmarks/audit_power.py [--sizes 100000,1000000] [--seeds 10] [--jobs 2]
[--large 10000000] [--only NAME,...] [--methods classifier,threshold] [--confidence 0.95]
[--workers 1] [--progress]``; ``--workers`` is :class:`dpcert.audits.ClassifierSearch`'s (processes of one
audit; ``--jobs`` audits run at a time);
``--progress`` prints every audit's result to stderr as one JSON line as soon as it is known (a long
run then shows its results before the table); ``--methods classifier``
runs the classifier search alone (its evaluation is streamed, so 10⁷ draws per input fit in
memory); ``--large`` audits with the classifier search alone, one seed, at that many draws per
input (the threshold search holds every draw in memory: 10⁷ draws of a ten-query sparse vector are
1.6 GB per input pair, so it is not run there).  Entries with a published DP-Sniper bound get a line
comparing it with the bounds measured here.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from statistics import median

import numpy as np

from dpcert.audits import CandidatePairs, ClassifierSearch, audit
from dpcert.audits.benchmark_mechanisms import benchmark_mechanism, benchmark_mechanisms

# DP-Sniper's own wall times, logistic regression (eth-sri/dp-sniper at ee087b2,
# eval_sp2021/reference-results/dd_search_reg_data.log: time_dd_search, time_final_estimate_eps, seconds,
# on its authors' machine with every core: the search on 1.07·10⁷ draws per input and the final
# estimate on 2·10⁸)
DPSNIPER_SECONDS = {
    "DPSniper-Laplace": (19.55, 1.85),
    "DPSniper-TruncatedGeometric": (17.93, 1.54),
    "DPSniper-NoisyHist1": (34.75, 2.91),
    "DPSniper-NoisyHist2": (37.82, 2.79),
    "DPSniper-ReportNoisyMax1": (58.82, 2.99),
    "DPSniper-ReportNoisyMax2": (55.72, 2.69),
    "DPSniper-ReportNoisyMax3": (59.36, 3.04),
    "DPSniper-ReportNoisyMax4": (59.82, 3.07),
    "DPSniper-SVT1": (117.97, 8.01),
    "DPSniper-SVT2": (148.10, 11.82),
    "DPSniper-SVT3": (149.82, 10.51),
    "DPSniper-SVT4": (122.70, 7.79),
    "DPSniper-SVT5": (56.25, 2.64),
    "DPSniper-SVT6": (90.68, 4.83),
    "DPSniper-Rappor": (130.64, 14.21),
    "DPSniper-OneTimeRappor": (79.88, 9.23),
    "DPSniper-LaplaceParallel": (96.47, 7.98),
    "DPSniper-SVT34Parallel": (341.26, 22.66),
    "DPSniper-PrefixSum": (92.13, 4.85),
    "DPSniper-NumericalSVT": (142.22, 9.47),
}


def _one(task: tuple[str, str, int, int, float, int]) -> dict:
    name, method, samples, seed, confidence, workers = task
    entry = benchmark_mechanism(name)
    pairs = CandidatePairs(entry.pairs(), relation=entry.relation)
    search = ClassifierSearch(pairs, workers=workers) if method == "classifier" else pairs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        report = audit(
            entry.mechanism,
            epsilon=entry.claimed_epsilon,
            search=search,
            samples=samples,
            seed=seed,
            confidence=confidence,
        )
        seconds = time.perf_counter() - start
    return {
        "name": name,
        "method": method,
        "samples": samples,
        "seed": seed,
        "bound": report.epsilon_lower_bound,
        "violated": report.violated,
        "seconds": seconds,
        "draws_per_second": 2 * samples / seconds,
    }


def _epsilon(value: float | None) -> str:
    if value is None:
        return "not stated"
    return "∞" if math.isinf(value) else f"{value:g}"


def _cell(results: list[dict], correct: bool) -> str:
    if not results:
        return "–"
    hits = sum(r["violated"] for r in results)
    bounds = [r["bound"] for r in results]
    seconds = median(r["seconds"] for r in results)
    speed = median(r["draws_per_second"] for r in results)
    what = f"{hits}/{len(results)} false alarms" if correct else f"{hits}/{len(results)} caught"
    bounds_text = f"bound med {median(bounds):.3f}, max {max(bounds):.3f}"
    return f"{what}; {bounds_text}; {seconds:.1f} s; {speed / 1e6:.2f} M/s"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument(
        "--first-seed", type=int, default=0, help="seeds run: first-seed .. first-seed + seeds - 1"
    )
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--large", type=int, default=0)
    parser.add_argument("--only", default="")
    parser.add_argument("--methods", default="classifier,threshold")
    parser.add_argument("--progress", action="store_true")
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    if not 0.0 < args.confidence < 1.0:
        parser.error(f"--confidence: {args.confidence!r} is not in (0, 1)")
    if args.workers < 1 or args.jobs < 1:
        parser.error(f"--workers {args.workers}, --jobs {args.jobs}: each must be at least 1")
    if args.seeds < 1 or args.first_seed < 0:
        parser.error(f"--seeds {args.seeds}, --first-seed {args.first_seed}: at least 1 and at least 0")
    methods = [m for m in args.methods.split(",") if m]
    for method in methods:
        if method not in ("classifier", "threshold"):
            parser.error(f"--methods: {method!r} is not classifier or threshold")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    entries = [e for e in benchmark_mechanisms() if not args.only or e.name in args.only.split(",")]
    tasks = [
        (e.name, method, size, seed, args.confidence, args.workers)
        for size in sizes
        for e in entries
        for seed in range(args.first_seed, args.first_seed + args.seeds)
        for method in methods
    ]
    tasks += [
        (e.name, "classifier", args.large, 0, args.confidence, args.workers) for e in entries if args.large
    ]
    load_before = os.getloadavg()
    start = time.perf_counter()
    results = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for result in pool.map(_one, tasks, chunksize=1):
            results.append(result)
            if args.progress:
                print(json.dumps(result), file=sys.stderr, flush=True)
    wall = time.perf_counter() - start
    load_after = os.getloadavg()

    def pick(name: str, method: str, size: int) -> list[dict]:
        return [r for r in results if r["name"] == name and r["method"] == method and r["samples"] == size]

    lines = [
        "## Audit power per draw: classifier search against the threshold search (benchmark mechanisms)",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"numpy {np.__version__}; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after; "
        f"audits run {args.jobs} at a time, each with `ClassifierSearch(workers={args.workers})`; "
        f"{wall:.0f} s in all.",
        "",
        "Command: `" + " ".join(["python", "benchmarks/audit_power.py", *sys.argv[1:]]) + "`",
        "",
        f"Each cell: caught (buggy) or false alarms (correct) over seeds {args.first_seed}.."
        f"{args.first_seed + args.seeds - 1} at confidence {args.confidence:g}; median and largest lower "
        "bound; median time to verdict; median draws per second (both inputs, screening included).",
        "",
        "| mechanism | source | claimed ε | true ε | relation | draws per input | classifier | threshold |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for size in sizes + ([args.large] if args.large else []):
        for entry in entries:
            classifier = pick(entry.name, "classifier", size)
            threshold = pick(entry.name, "threshold", size)
            if not classifier and not threshold:
                continue
            lines.append(
                f"| {entry.name}{'' if entry.correct else ' (buggy)'} | {entry.source} | "
                f"{entry.claimed_epsilon:g} | {_epsilon(entry.true_epsilon)} | {entry.relation} | "
                f"{size:.0e} | {_cell(classifier, entry.correct)} | {_cell(threshold, entry.correct)} |"
            )
    buggy = [e for e in entries if not e.correct]
    correct = [e for e in entries if e.correct]
    lines.append("")
    for size in sizes:
        summary = []
        for method in methods:
            caught = sum(sum(r["violated"] for r in pick(e.name, method, size)) for e in buggy)
            alarms = sum(sum(r["violated"] for r in pick(e.name, method, size)) for e in correct)
            good = sum(
                sum(r["violated"] for r in pick(e.name, method, size)) >= 0.8 * args.seeds for e in buggy
            )
            summary.append(
                f"{method}: {caught}/{len(buggy) * args.seeds} buggy audits caught, {good}/{len(buggy)} "
                f"buggy mechanisms caught in ≥ 80 % of the {args.seeds} seeds, "
                f"{alarms}/{len(correct) * args.seeds} false alarms"
            )
        lines.append(f"- {size:.0e} draws per input: " + "; ".join(summary) + ".")
    for entry in entries:
        if entry.published_bound is None:
            continue
        ours = [
            f"{method} at {size:.0e}: median {median(r['bound'] for r in found):.3f}, "
            f"{sum(r['bound'] >= entry.published_bound for r in found)}/{len(found)} seeds at least as high"
            for size in sizes + ([args.large] if args.large else [])
            for method in methods
            if (found := pick(entry.name, method, size))
        ]
        logged = DPSNIPER_SECONDS.get(entry.name)
        times = [
            f"classifier at {size:.0e}: median {median(r['seconds'] for r in found):.1f} s to the verdict"
            for size in sizes + ([args.large] if args.large else [])
            if (found := pick(entry.name, "classifier", size))
        ]
        if logged is not None and times:
            ours.append(
                f"time: DP-Sniper's log {logged[0]:.0f} s search + {logged[1]:.0f} s final estimate (its "
                f"machine, every core), ours " + ", ".join(times)
            )
        lines.append(
            f"- {entry.name}: DP-Sniper's published bound {entry.published_bound:g} (2·10⁸ draws per "
            "input, confidence 0.9); " + "; ".join(ours) + "."
        )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
