"""Private MAB baselines on the Tenenbaum et al. 2021 instance, side by side with the authors' DP-SE.

Bernoulli arms μ = (0.9, 0.8×3, 0.6×3, 0.3×3), T = 10⁶ by default.  Per ε, on seeds ``seed + i``:

* dpcert ``dp-ucb`` (Mishra & Thakurta 2015, central, binary-mechanism sums),
* dpcert ``dp-se`` (Sajed & Sheffet 2019, central) and the authors' ``MABPrivate.DPSE``
  (sayakrc/Differentially-Private-Bandits, pass its folder with ``--authors``; driven as
  ``benchmarks/dp_se.py`` drives it) — the anchor,
* dpcert ``ldp-ucb`` and ``ldp-se`` (Ren, Zhou, Liu & Shroff 2020, local, Bernoulli response).

The authors' repository has no DP-UCB, LDP-UCB or LDP-SE, so those rows have no second implementation
to run against (their exactness is tested against written-out versions in tests/test_dp_ucb.py and
tests/test_ldp_mab.py); the anchor row shows the same instance and seeds through the authors' DP-SE.
DP-UCB against DP-SE is decided by the paired t-test of dpcert's ``paired_verdict`` (run i against run
i, independent streams).  CPU seconds per run, one run at a time, one process.

    python benchmarks/private_mab_baselines.py [--runs 10] [--horizon 1000000] [--epsilons 0.1 1]
        [--authors /tmp/authors_dpb] [--out FILE]
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from dpcert.bandits.algorithms.dp_se import dp_se
from dpcert.bandits.algorithms.dp_ucb import dp_ucb
from dpcert.bandits.algorithms.ldp_mab import ldp_se, ldp_ucb
from dpcert.bandits.environments.mab import SPEC_001_MEANS, MultiArmedBandit
from dpcert.bandits.results import RunResult
from dpcert.reproductions.claims import paired_verdict

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dp_se import PARAMS, _authors_run  # noqa: E402  (the authors' driver of benchmarks/dp_se.py)

BANDIT = MultiArmedBandit(np.asarray(SPEC_001_MEANS))
OURS: dict[str, Callable[..., RunResult]] = {
    "dpcert dp-ucb (central)": dp_ucb,
    "dpcert dp-se (central)": lambda b, t, rng, epsilon: dp_se(
        b, t, rng, epsilon=epsilon, beta=PARAMS["delta"]
    ),
    "dpcert ldp-ucb (local)": ldp_ucb,
    "dpcert ldp-se (local)": ldp_se,
}


def _ours(name: str, epsilon: float, horizon: int, seed: int) -> tuple[float, float]:
    started = time.process_time()
    result = OURS[name](BANDIT, horizon, np.random.default_rng(seed), epsilon=epsilon)
    return float(result.final_regret[0]), time.process_time() - started


def _mean_se(values: np.ndarray) -> str:
    return f"{values.mean():,.0f} ± {values.std(ddof=1) / math.sqrt(values.size):,.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--horizon", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 1.0])
    parser.add_argument("--authors", type=Path, default=Path("/tmp/authors_dpb"))
    parser.add_argument("--out", type=Path, default=None, help="also write the markdown section here")
    args = parser.parse_args()
    if not (args.authors / "MABPrivate.py").is_file():
        parser.error(f"--authors: no MABPrivate.py in {args.authors}")
    sys.path.insert(0, str(args.authors))
    module = importlib.import_module("MABPrivate")
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent
    ).stdout.strip()
    load_before = os.getloadavg()
    started = time.perf_counter()
    seeds = [args.seed + i for i in range(args.runs)]
    table: dict[float, dict[str, np.ndarray]] = {}
    for epsilon in args.epsilons:
        table[epsilon] = {
            name: np.array([_ours(name, epsilon, args.horizon, s) for s in seeds]) for name in OURS
        }
        table[epsilon]["authors' MABPrivate.DPSE (central)"] = np.array(
            [_authors_run(module, module.DPSE, epsilon, args.horizon, s) for s in seeds]
        )
        print(f"eps={epsilon}: done ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    load_after = os.getloadavg()
    total = time.perf_counter() - started
    command = (
        f"python benchmarks/private_mab_baselines.py --runs {args.runs} --horizon {args.horizon} "
        f"--seed {args.seed} --epsilons {' '.join(f'{e:g}' for e in args.epsilons)} --authors {args.authors}"
    )
    names = list(next(iter(table.values())))
    lines = [
        "## Private MAB baselines (DP-UCB, DP-SE, LDP-UCB, LDP-SE) on the Tenenbaum et al. 2021 instance",
        "",
        f"Command: `{command}` at commit {commit}.  Machine: {platform.machine()}, {os.cpu_count()} cores "
        f"shared, {platform.python_implementation()} {platform.python_version()}, numpy {np.__version__}; "
        f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after; total {total:.0f} s.  "
        f"Bernoulli μ = (0.9, 0.8×3, 0.6×3, 0.3×3), T = {args.horizon:,}, {args.runs} runs per row (run i: "
        f"seed {args.seed} + i).  Pseudo-regret, mean ± s.e.; CPU seconds per run.",
        "",
        "| ε | " + " | ".join(names) + " | DP-UCB vs DP-SE (paired t-test) |",
        "|---|" + "---|" * (len(names) + 1),
    ]
    for epsilon, rows in table.items():
        test = paired_verdict(
            rows["dpcert dp-ucb (central)"][:, 0],
            rows["dpcert dp-se (central)"][:, 0],
            "first > second",
            labels=("DP-UCB", "DP-SE"),
        )
        cells = [f"{_mean_se(rows[n][:, 0])} ({rows[n][:, 1].mean():.2f} s)" for n in names]
        lines.append(
            f"| {epsilon:g} | " + " | ".join(cells) + f" | DP-UCB > DP-SE: {test.holds}; {test.numbers} |"
        )
    section = "\n".join(lines) + "\n"
    print(section)
    if args.out is not None:
        args.out.write_text(section)


if __name__ == "__main__":
    main()
