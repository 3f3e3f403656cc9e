"""Mechanisms on query-answer vectors with known privacy, correct and buggy, for the neighbour search.

Neighbours are answer vectors that differ by at most 1 per entry (counting queries, ℓ∞ radius 1).
All take ``(answers, rng, size)`` and return ``size`` outputs.

* Report noisy max (Dwork & Roth 2014, §3.3): the index of the largest ``answer + Lap(2/ε)`` is ε-DP
  for these neighbours; with ``Lap(1/ε)`` noise (correct only when all answers move the same way,
  Dwork & Roth Claim 3.9) its privacy loss tends to 2ε as answers move in opposite directions.
* Exponential mechanism (McSherry & Talwar 2007): index i with probability ∝ exp(ε u_i / 2) is ε-DP;
  without the factor 2 it is only 2ε-DP (sampled exactly by the Gumbel-max trick).
* Sparse vector with threshold T (Lyu, Su & Li 2017, "Understanding the sparse vector technique for
  differential privacy", PVLDB 10(6)): their Algorithm 1 with c = 1 (ρ ~ Lap(2/ε), ν_i ~ Lap(4/ε),
  stop after the first ⊤) is ε-DP.  Their Algorithm 5 (Stoddard et al. 2014: no query noise, no
  cutoff) and Algorithm 6 (Chen et al. 2015: ν_i ~ Lap(2/ε), no cutoff) are not ε-DP.  Outputs
  are vectors with 1 for ⊤, 0 for ⊥ and −1 for queries left unanswered after the cutoff.
"""

from __future__ import annotations

import numpy as np

SVT_THRESHOLD = 0.0


def _answers(answers, size: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(answers, float), (size, np.size(answers)))


def noisy_max(scale_per_epsilon: float, epsilon: float = 1.0):
    """Index of the largest answer plus Laplace(``scale_per_epsilon``/ε) noise (2 correct, 1 buggy)."""

    def mechanism(answers, rng, size):
        values = _answers(answers, size)
        return np.argmax(values + rng.laplace(0.0, scale_per_epsilon / epsilon, values.shape), axis=1)

    return mechanism


def exponential_mechanism(divisor: float, epsilon: float = 1.0):
    """Index i with probability ∝ exp(ε u_i / ``divisor``) (2 correct, 1 buggy)."""

    def mechanism(answers, rng, size):
        values = _answers(answers, size)
        return np.argmax(epsilon * values / divisor + rng.gumbel(0.0, 1.0, values.shape), axis=1)

    return mechanism


def sparse_vector_correct(epsilon: float = 1.0):
    """Lyu, Su & Li (2017) Algorithm 1 with c = 1: ρ ~ Lap(2/ε), ν_i ~ Lap(4/ε), stop at the first ⊤."""

    def mechanism(answers, rng, size):
        values = _answers(answers, size)
        rho = rng.laplace(0.0, 2.0 / epsilon, (size, 1))
        above = values + rng.laplace(0.0, 4.0 / epsilon, values.shape) >= SVT_THRESHOLD + rho
        first = np.cumsum(above, axis=1)
        answered = (first - above) == 0  # no ⊤ before this query
        return np.where(answered, above.astype(np.int8), np.int8(-1))

    return mechanism


def sparse_vector_without_query_noise(epsilon: float = 1.0):
    """Lyu, Su & Li (2017) Algorithm 5 (Stoddard et al. 2014): ρ ~ Lap(2/ε), no query noise, no cutoff."""

    def mechanism(answers, rng, size):
        values = _answers(answers, size)
        rho = rng.laplace(0.0, 2.0 / epsilon, (size, 1))
        return (values >= SVT_THRESHOLD + rho).astype(np.int8)

    return mechanism


def sparse_vector_without_cutoff(epsilon: float = 1.0):
    """Lyu, Su & Li (2017) Algorithm 6 (Chen et al. 2015): ρ ~ Lap(2/ε), ν_i ~ Lap(2/ε), no cutoff."""

    def mechanism(answers, rng, size):
        values = _answers(answers, size)
        rho = rng.laplace(0.0, 2.0 / epsilon, (size, 1))
        return (values + rng.laplace(0.0, 2.0 / epsilon, values.shape) >= SVT_THRESHOLD + rho).astype(np.int8)

    return mechanism


BUGGY = {
    "noisy max Lap(1/eps)": noisy_max(1.0),
    "exponential without factor 2": exponential_mechanism(1.0),
    "sparse vector without query noise": sparse_vector_without_query_noise(),
    "sparse vector without cutoff": sparse_vector_without_cutoff(),
}
CORRECT = {
    "noisy max Lap(2/eps)": noisy_max(2.0),
    "exponential mechanism": exponential_mechanism(2.0),
    "sparse vector (Lyu et al. Alg. 1, c = 1)": sparse_vector_correct(),
}
