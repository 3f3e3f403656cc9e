"""Benchmark: time to compose 1 000 certificates, and accuracy against the exact Gaussian composition.

Run as ``python benchmarks/composition.py``; prints the markdown section for benchmarks/RESULTS.md.
"""

from __future__ import annotations

import math
import os
import platform
import subprocess
import time

from dpcert.accounting.composition import compose
from dpcert.certificates import approximate_dp_certificate
from dpcert.mechanisms.gaussian import gaussian_certificate, gaussian_epsilon
from dpcert.mechanisms.laplace import laplace_certificate

REPEATS = 3


def best_time(function) -> tuple[float, object]:
    """Smallest wall time over REPEATS runs (and the last result)."""
    times, result = [], None
    for _ in range(REPEATS):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    cases = {
        "1 000 identical Gaussians (sigma=10), best (exact Gaussian)": (
            [gaussian_certificate(10.0, delta=1e-7)] * 1000,
            "best",
        ),
        "1 000 distinct Gaussians (sigma in [5, 50]), best (exact Gaussian)": (
            [gaussian_certificate(5.0 + 0.045 * i, delta=1e-7) for i in range(1000)],
            "best",
        ),
        "1 000 identical (0.01, 1e-9)-DP, best (basic/advanced/optimal/pld)": (
            [approximate_dp_certificate(0.01, 1e-9)] * 1000,
            "best",
        ),
        "1 000 identical (0.01, 1e-9)-DP, optimal (KOV)": (
            [approximate_dp_certificate(0.01, 1e-9)] * 1000,
            "optimal",
        ),
        "1 000 mixed: 500 Laplace (10 scales) + 500 (eps, delta)-DP (10 kinds), best": (
            [laplace_certificate(50.0 + 5 * (i % 10)) for i in range(500)]
            + [approximate_dp_certificate(0.005 + 0.001 * (i % 10), 1e-10) for i in range(500)],
            "best",
        ),
        "1 000 distinct Laplace, best": ([laplace_certificate(100.0 + i) for i in range(1000)], "best"),
    }
    lines = []
    for name, (certificates, method) in cases.items():
        seconds, certificate = best_time(lambda c=certificates, m=method: compose(c, method=m, delta=1e-5))
        chosen = certificate.parameters.get("method", "gaussian (exact)")
        lines.append(f"| {name} | {seconds:.3f} | {certificate.epsilon:.6g} | {chosen} |")

    exact = gaussian_epsilon(1e-5, 1.0)
    hundred = [gaussian_certificate(10.0, delta=1e-5)] * 100
    accuracy = []
    for method in ("best", "pld", "rdp"):
        seconds, certificate = best_time(lambda m=method: compose(hundred, method=m, delta=1e-5))
        relative = certificate.epsilon / exact - 1
        accuracy.append(f"| {method} | {certificate.epsilon:.10g} | {relative:+.2e} | {seconds:.3f} |")

    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print("### Composition (accounting)\n")
    print("Command: `python benchmarks/composition.py`  ")
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores; `uptime`: {load}  ")
    print(f"Times are the best of {REPEATS} runs, delta = 1e-5.\n")
    print("| composition of 1 000 certificates | seconds | epsilon | method chosen |")
    print("|---|---|---|---|")
    print("\n".join(lines))
    print(
        f"\n100 Gaussians (sigma = 10, sensitivity 1) at delta = 1e-5; "
        f"exact epsilon = {exact:.10g} (mu = 1):\n"
    )
    print("| method | epsilon | relative to exact | seconds |")
    print("|---|---|---|---|")
    print("\n".join(accuracy))
    assert math.isfinite(exact)


if __name__ == "__main__":
    main()
