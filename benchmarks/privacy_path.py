"""Benchmark: bandit runs through the PrivacySession against the previous code, side by side.

Run as ``python benchmarks/privacy_path.py [--anchor /path/to/previous/src]``; prints a markdown section
for ``benchmarks/RESULTS.md``.  Each workload runs in a fresh subprocess, alternately with this tree's
``src`` and the anchor's (``PYTHONPATH``), ``--repeats`` times; the table gives each side's best run
(by process CPU time: the machine is shared, so wall time includes other users' load) and the final
regret, which must agree (same seeds, same noise) unless a fix changed a calibration.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "src"
WORKLOADS = {
    "LinUCB Figure 1 panel, eps = 0.2 (5 algorithms x 50 runs x T = 20,000)": (
        "try:\n"
        "    from dpcert.reproductions.chowdhury_zhou_2022 import figure_runs\n"
        "except ImportError:  # code before the algorithms/figures layout\n"
        "    from dpcert.bandits.linucb import figure_runs\n"
        "runs = figure_runs(0.2, runs=50, horizon=20_000)\n"
        "value = {k: round(float(r.cumulative_regret[:, -1].mean()), 6) for k, r in runs.items()}\n"
    ),
    "DP-DPE central/local/shuffle, tight, (1, 1e-5), T = 100,000, 4 runs": (
        "from dpcert.bandits import registry\n"
        "value = {}\n"
        "for privacy in ('central', 'local', 'shuffle'):\n"
        "    config = registry.RunConfig('dp-dpe', privacy, 1.0, 1e-5, horizon=100_000, runs=4, seed=1)\n"
        "    run = registry.algorithm('dp-dpe').run(config)\n"
        "    value[privacy] = round(run.final_regret()[0], 6)\n"
    ),
    "VB-SDP-AE, (1, 1e-6), T = 1,000,000, 20 runs": (
        "from dpcert.bandits import registry\n"
        "config = registry.RunConfig('vb-sdp-ae', 'shuffle', 1.0, 1e-6, horizon=1_000_000, runs=20, seed=1)\n"
        "value = round(registry.algorithm('vb-sdp-ae').run(config).final_regret()[0], 6)\n"
    ),
}
TIMER = (
    "import time\nstart, cpu = time.perf_counter(), time.process_time()\n{body}"
    "seconds, cpu = time.perf_counter() - start, time.process_time() - cpu\n"
)
REPORT = "import json\nprint(json.dumps({{'seconds': seconds, 'cpu': cpu, 'value': value}}))\n"


def measure(body: str, src: Path) -> dict:
    code = TIMER.format(body=body) + REPORT.format()
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--anchor", type=Path, default=Path("/work/main/src"), help="previous code's src")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print("## Bandit privacy path: runs through the PrivacySession vs the previous code\n")
    print(f"Command: `python benchmarks/privacy_path.py --anchor {args.anchor} --repeats {args.repeats}`; ")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; ")
    print(f"`uptime` at start: `{uptime}`\n")
    print("| workload | previous: wall / CPU | session: wall / CPU | CPU ratio | same regret |")
    print("|---|---|---|---|---|")
    for name, body in WORKLOADS.items():
        times: dict[str, list[tuple[float, float]]] = {"anchor": [], "session": []}
        values = {}
        for _ in range(args.repeats):  # alternate, so that load drifts hit both alike
            for label, src in (("anchor", args.anchor), ("session", HERE)):
                result = measure(body, src)
                times[label].append((result["cpu"], result["seconds"]))
                values[label] = result["value"]
        (previous_cpu, previous), (current_cpu, current) = min(times["anchor"]), min(times["session"])
        same = values["anchor"] == values["session"]
        verdict = "yes" if same else f"no: {values['anchor']} vs {values['session']}"
        print(
            f"| {name} | {previous:.2f} s / {previous_cpu:.2f} s | {current:.2f} s / {current_cpu:.2f} s "
            f"| {current_cpu / previous_cpu:.2f} | {verdict} |"
        )
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"\n`uptime` at the end: `{uptime}`")


if __name__ == "__main__":
    main()
