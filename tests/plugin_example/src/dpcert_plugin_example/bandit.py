"""A bandit algorithm defined outside dpcert: explore-then-commit with randomized-response rewards.

Each user plays one round and reports her Bernoulli reward through binary randomized response (the
package's k-ary randomized response with k = 2: the true bit with probability p = e^ε/(1 + e^ε)).  The
server debiases the reports, ``(report − (1 − p))/(2p − 1)``, explores the arms in turn for the first
``explore`` rounds and then commits to the arm with the best estimate.  Every user is charged through
her run's :class:`~dpcert.session.PrivacySession` before her report is randomized, so ``dpcert bandit
run example-rr-etc --ledger FILE`` records one charge per user.

The package declares the algorithm in the entry-point group ``dpcert.algorithms`` (its pyproject.toml).
"""

from __future__ import annotations

import math
import time

import numpy as np

from dpcert.bandits.experiment import certified_run, open_sessions, target_of
from dpcert.bandits.registry import AlgorithmSpec, BanditRun, RunConfig
from dpcert.errors import InvalidParameter
from dpcert.profiles import TrustModel
from dpcert_plugin_example import k_rr_certificate

MEANS = (0.9, 0.6, 0.3)


def report_probability(epsilon: float) -> float:
    """p with ln(p/(1 − p)) a hair below ε, so that the rounded-up certificate states at most ε."""
    inner = epsilon * (1.0 - 1e-12) - 1e-15
    return 1.0 / (1.0 + math.exp(-inner))


def run(config: RunConfig) -> BanditRun:
    """R runs of explore-then-commit on Bernoulli arms ``MEANS`` (option ``explore``, default T/10)."""
    if config.privacy is not TrustModel.LOCAL:
        raise InvalidParameter("privacy", config.privacy, "local")
    if config.epsilon is None or not config.epsilon > 0:
        raise InvalidParameter("epsilon", config.epsilon, "a number > 0")
    explore = int(config.options.get("explore", max(len(MEANS), config.horizon // 10)))
    if not 1 <= explore <= config.horizon:
        raise InvalidParameter("explore", explore, f"an integer in [1, {config.horizon}]")
    start = time.perf_counter()
    p = report_probability(config.epsilon)
    certificate = k_rr_certificate(2, p)
    means = np.array(MEANS)
    arms = means.size
    rng = np.random.default_rng(config.seed)
    sessions = open_sessions(config, config.runs)
    gaps = np.empty((config.runs, config.horizon))
    for index, session in enumerate(sessions):
        sums, counts = np.zeros(arms), np.zeros(arms)
        chosen = np.empty(config.horizon, dtype=np.int64)
        for t in range(config.horizon):
            arm = t % arms if t < explore else int(np.argmax(sums / np.maximum(counts, 1)))
            chosen[t] = arm
            reward = float(rng.random() < means[arm])
            if t < explore:  # the server only needs the reports of the exploration rounds
                session.charge([t], certificate)  # charged before the report is randomized
                keep = rng.random() < p
                report = reward if keep else 1.0 - reward
                sums[arm] += (report - (1.0 - p)) / (2.0 * p - 1.0)
                counts[arm] += 1
        gaps[index] = means.max() - means[chosen]
    return certified_run(
        "example-rr-etc",
        np.cumsum(gaps, axis=1),
        sessions,
        explore,
        seconds=time.perf_counter() - start,
        target=target_of(config),
        privacy=TrustModel.LOCAL,
        extras={"report_probability": p, "explore": explore},
    )


SPEC = AlgorithmSpec(
    "example-rr-etc",
    "explore-then-commit with binary randomized-response rewards (an algorithm from another package)",
    ("local",),
    run,
    options=frozenset({"explore"}),
)
