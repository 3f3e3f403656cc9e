"""What ``--secure`` costs in the central MAB elimination and the robust elimination: a RESULTS.md section.

Run as ``python benchmarks/secure_bandits.py``.  Each row runs ``dpcert bandit run`` configurations
through the Python API, float noise and integer-exact noise (``secure``) side by side with the same
seed, instance and horizon, and reports the wall time (best of two) and the mean final regret with
its standard error over the runs.
"""

from __future__ import annotations

import os
import platform
import time

from dpcert.bandits import registry
from dpcert.bandits.registry import mean_stderr

CASES = [
    ("mab-se", "central", 1.0, 1_000_000, 20, {}),
    ("mab-se", "central", 1.0, 1_000_000, 20, {"reward_model": "beta"}),
    ("robust-elimination", "local", 1.0, 100_000, 10, {}),
    ("robust-elimination", "local", 1.0, 100_000, 50, {"model": "M2"}),
]


def run(algorithm: str, privacy: str, epsilon: float, horizon: int, runs: int, options: dict):
    config = registry.RunConfig(
        algorithm, privacy, epsilon, None, horizon=horizon, runs=runs, seed=7, options=options
    )
    best, result = float("inf"), None
    for _ in range(2):
        start = time.perf_counter()
        result = registry.algorithm(algorithm).run(config)
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
          f"load: {os.getloadavg()}")  # fmt: skip
    print("| run | horizon × runs | noise | seconds | final regret (mean ± s.e.) | certificate ε | sampler |")
    print("|---|---|---|---|---|---|---|")
    for algorithm, privacy, epsilon, horizon, runs, options in CASES:
        label = f"{algorithm} --privacy {privacy}" + "".join(f" {k}={v}" for k, v in options.items())
        for secure in (False, True):
            seconds, result = run(algorithm, privacy, epsilon, horizon, runs, {**options, "secure": secure})
            mean, stderr = mean_stderr(result.cumulative_regret[:, -1])
            certificate = result.certificate
            print(
                f"| {label} | {horizon:,} × {runs} | {'integer-exact' if secure else 'float'} | "
                f"{seconds:.2f} | {mean:.0f} ± {stderr:.0f} | {certificate.epsilon:.6f} | "
                f"{', '.join(sorted(samplers(certificate.to_dict())))} |"
            )


def samplers(certificate: dict) -> set[str]:
    """The samplers recorded by a certificate or, for a composition, by its components."""
    if certificate["mechanism"] != "composition":
        return {str(certificate["parameters"].get("sampler"))}
    return set().union(*(samplers(c["certificate"]) for c in certificate["parameters"]["components"]))


if __name__ == "__main__":
    main()
