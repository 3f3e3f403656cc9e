"""Benchmark: time to compose 1 000 certificates, and accuracy against the exact Gaussian composition.

Also measures, side by side in one run, dpcert's ``pld`` composition of 1 000 mixed certificates
(Gaussian, Laplace, (ε, δ)) against the same PLD built directly with ``dp_accounting`` (one PLD per
distinct mechanism, ``self_compose`` by count, ``compose``, ``get_epsilon_for_delta``), and
``best`` of 1 000 pure 1-DP certificates against ``optimal`` (KOV, exact).

Run as ``python benchmarks/composition.py``; prints the markdown section for benchmarks/RESULTS.md.
"""

from __future__ import annotations

import math
import os
import platform
import subprocess
import time

from dpcert.accounting.composition import clear_pld_cache, compose
from dpcert.certificates import approximate_dp_certificate
from dpcert.mechanisms.gaussian import gaussian_certificate
from dpcert.mechanisms.laplace import laplace_certificate
from dpcert.theory.gaussian import gaussian_epsilon

REPEATS = 3
INTERVAL = 1e-4


def mixed_certificates() -> list:
    """1 000 certificates: 300 Gaussian (10 scales), 400 Laplace (10 scales), 300 (ε, δ) (10 kinds)."""
    return (
        [gaussian_certificate(20.0 + (i % 10), delta=1e-7) for i in range(300)]
        + [laplace_certificate(50.0 + 5 * (i % 10)) for i in range(400)]
        + [approximate_dp_certificate(0.005 + 0.001 * (i % 10), 1e-10) for i in range(300)]
    )


def cold_compose(certificates: list, method: str) -> float:
    """compose() with dpcert's memoised single-mechanism PLDs cleared first (a cold start)."""
    clear_pld_cache()
    return compose(certificates, method=method, delta=1e-5).epsilon


def dp_accounting_direct(delta: float) -> float:
    """The same 1 000 mechanisms composed with dp_accounting's PLD API directly."""
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as pld

    parts = [
        pld.from_gaussian_mechanism(20.0 + i, value_discretization_interval=INTERVAL).self_compose(30)
        for i in range(10)
    ]
    parts += [
        pld.from_laplace_mechanism(50.0 + 5 * i, value_discretization_interval=INTERVAL).self_compose(40)
        for i in range(10)
    ]
    parts += [
        pld.from_privacy_parameters(
            common.DifferentialPrivacyParameters(0.005 + 0.001 * i, 1e-10),
            value_discretization_interval=INTERVAL,
        ).self_compose(30)
        for i in range(10)
    ]
    result = parts[0]
    for part in parts[1:]:
        result = result.compose(part)
    return float(result.get_epsilon_for_delta(delta))


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

    import dp_accounting.pld.privacy_loss_distribution  # noqa: F401  (import time is not measured)

    mixed = mixed_certificates()
    side_by_side = []
    for name, function in (
        ("dpcert compose(method='pld'), cold", lambda: cold_compose(mixed, "pld")),
        ("dpcert compose(method='best'), cold", lambda: cold_compose(mixed, "best")),
        ("dpcert compose(method='pld'), single PLDs memoised", lambda: compose(mixed, "pld", 1e-5).epsilon),
        ("dp_accounting PLD built directly", lambda: dp_accounting_direct(1e-5)),
    ):
        seconds, epsilon = best_time(function)
        side_by_side.append((name, seconds, epsilon))
    pure = [approximate_dp_certificate(1.0)] * 1000
    pure_rows = []
    for method in ("optimal", "best"):
        seconds, certificate = best_time(lambda m=method: compose(pure, method=m, delta=1e-5))
        pure_rows.append((method, seconds, certificate.epsilon))

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
    print("\n1 000 mixed certificates (300 Gaussian, 400 Laplace, 300 (eps, delta)), delta = 1e-5:\n")
    print("| composition | seconds | epsilon | ratio to dp_accounting |")
    print("|---|---|---|---|")
    anchor = side_by_side[-1][1]
    for name, seconds, epsilon in side_by_side:
        print(f"| {name} | {seconds:.3f} | {epsilon:.10g} | {seconds / anchor:.2f}x |")
    print("\n1 000 pure 1-DP certificates, delta = 1e-5:\n")
    print("| method | seconds | epsilon |")
    print("|---|---|---|")
    for method, seconds, epsilon in pure_rows:
        print(f"| {method} | {seconds:.4f} | {epsilon:.10g} |")
    assert math.isfinite(exact)


# --------------------------------------------------------------------------- soundness sweep
def kov_exact_delta(epsilon: float, epsilon0: float, k: int) -> float:
    """KOV 2015, Thm 3.3 for pure ε0-DP in mpmath (50 digits), terms summed until negligible."""
    import mpmath

    mpmath.mp.dps = 50
    e0, eps = mpmath.mpf(epsilon0), mpmath.mpf(epsilon)
    log_norm = k * mpmath.log(1 + mpmath.exp(e0))
    top = min(k, math.floor((k - epsilon / epsilon0) / 2.0))
    while top >= 0 and (k - 2 * top) * epsilon0 <= epsilon:
        top -= 1
    total, biggest = mpmath.mpf(0), mpmath.mpf(0)
    for ell in range(top, -1, -1):
        log_binom = mpmath.loggamma(k + 1) - mpmath.loggamma(ell + 1) - mpmath.loggamma(k - ell + 1)
        term = mpmath.exp(log_binom + (k - ell) * e0 - log_norm) * (1 - mpmath.exp(eps - (k - 2 * ell) * e0))
        total += term
        biggest = max(biggest, term)
        if term < biggest * mpmath.mpf(10) ** -30:
            break
    return float(total)


def gaussian_exact_epsilon(mu: float, delta: float) -> float:
    """ε of the Gaussian mechanism with parameter μ (Balle & Wang 2018, Thm 8) in mpmath."""
    import mpmath

    mpmath.mp.dps = 60
    m = mpmath.mpf(mu)

    def excess(e: float) -> float:
        x = mpmath.mpf(e)
        return float(mpmath.ncdf(m / 2 - x / m) - mpmath.exp(x) * mpmath.ncdf(-m / 2 - x / m) - delta)

    from scipy.optimize import brentq

    if excess(0.0) <= 0.0:
        return 0.0
    return brentq(excess, 0.0, mu * mu + 20 * mu + 10, xtol=1e-13, rtol=1e-14)


def soundness() -> None:
    """Points checked and the worst (dpcert − exact) gaps for pure-DP and Gaussian compositions."""
    from dpcert.accounting.composition import compose_counts

    rows = []
    checked = violations = 0
    worst: dict[str, tuple[float, float, str]] = {}
    for epsilon0, k in ((0.003, 30_000), (0.01, 1000), (0.1, 100), (1.0, 10), (0.5, 1), (0.01, 100_000)):
        for delta in (1e-15, 1e-12, 1e-9, 1e-6, 1e-3, 0.5, 1 - 1e-9):
            optimal = compose_counts(
                [(approximate_dp_certificate(epsilon0), k)], method="optimal", delta=delta
            )
            for method in ("pld", "best", "optimal"):
                try:
                    certificate = compose_counts(
                        [(approximate_dp_certificate(epsilon0), k)], method=method, delta=delta
                    )
                except Exception:  # noqa: BLE001 (a refusal is allowed and counted)
                    continue
                checked += 1
                if kov_exact_delta(certificate.epsilon, epsilon0, k) > delta * (1 + 1e-9):
                    violations += 1
                gap = certificate.epsilon - optimal.epsilon
                key = f"pure DP, {method}"
                low, high, _ = worst.get(key, (math.inf, -math.inf, ""))
                worst[key] = (min(low, gap), max(high, gap), "")
    for sigmas, repeat in (((1.0,), 1), ((3.0, 10.0), 100), ((20.0,), 1000), ((0.5, 2.0), 10)):
        mu = math.sqrt(repeat * sum(1 / s**2 for s in sigmas))
        certificates = [gaussian_certificate(s, delta=0.5) for s in sigmas] * repeat
        for delta in (1e-15, 1e-12, 1e-9, 1e-6, 1e-3, 0.5, 1 - 1e-9):
            exact = gaussian_exact_epsilon(mu, delta)
            for method in ("pld", "rdp", "best"):
                try:
                    certificate = compose(certificates, method=method, delta=delta)
                except Exception:  # noqa: BLE001
                    continue
                checked += 1
                gap = certificate.epsilon - exact
                violations += gap < -1e-9 * max(1.0, exact)
                key = f"Gaussian, {method}"
                low, high, _ = worst.get(key, (math.inf, -math.inf, ""))
                worst[key] = (min(low, gap), max(high, gap), "")
    rows = [f"| {key} | {low:+.3g} | {high:+.3g} |" for key, (low, high, _) in worst.items()]
    print(f"\n{checked} points checked, {violations} below the exact value.\n")
    print("| family, method | smallest (dpcert − exact) epsilon | largest |")
    print("|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    import sys

    soundness() if "--soundness" in sys.argv else main()
