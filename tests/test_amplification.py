"""Amplification by shuffling: closed form, FMT numeric bound, exact randomized response, P_Amp."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.weightstats import ztest

from dpcert import Certificate, CertificateMismatch, PreconditionFailed, approximate_dp_certificate
from dpcert.mechanisms.shuffle.amplification import amplification_certificate
from dpcert.mechanisms.shuffle.pamp import (
    GaussianShuffleSum,
    ShuffleProtocol,
    calibrate_pamp,
    local_delta,
    pamp_paper_sigma,
)
from dpcert.theory import amplification as amp

# Statistical assertions: seeded, two-sided level 1e-4 each (suite false-positive rate < 0.1 %).
LEVEL = 1e-4


def randomized_response_delta(epsilon: float, epsilon0: float, users: int, ones_among_others: int) -> float:
    """Exact δ(ε) of n shuffled binary randomized-response reports (a valid ε0-LDP randomizer).

    The shuffled view is the count of ones; the target holds 0 versus 1; ``ones_among_others`` of
    the other n − 1 users hold 1.  Enumerated exactly over all counts, both directions.
    """
    flip = 1.0 / (math.exp(epsilon0) + 1.0)
    zeros = users - 1 - ones_among_others
    others = np.convolve(
        stats.binom.pmf(np.arange(zeros + 1), zeros, flip),
        stats.binom.pmf(np.arange(ones_among_others + 1), ones_among_others, 1 - flip),
    )
    target_zero = np.convolve(others, [1 - flip, flip])
    target_one = np.convolve(others, [flip, 1 - flip])
    growth = math.exp(epsilon)
    return max(
        np.clip(target_zero - growth * target_one, 0, None).sum(),
        np.clip(target_one - growth * target_zero, 0, None).sum(),
    )


def fmt_pair_delta_by_enumeration(epsilon: float, epsilon0: float, users: int) -> float:
    """FMT Thm 3.2's pair (P, Q) enumerated over (c, a, Δ) as 2-D outcomes, both directions."""
    alpha = math.exp(epsilon0) / (math.exp(epsilon0) + 1)
    p_law: dict[tuple[int, int], float] = {}
    q_law: dict[tuple[int, int], float] = {}
    for c in range(users):
        weight_c = stats.binom.pmf(c, users - 1, math.exp(-epsilon0))
        for a in range(c + 1):
            weight = weight_c * stats.binom.pmf(a, c, 0.5)
            for shift, weight_shift in ((1, alpha), (0, 1 - alpha)):
                p_key = (a + shift, c - a + 1 - shift)
                q_key = (a + 1 - shift, c - a + shift)
                p_law[p_key] = p_law.get(p_key, 0.0) + weight * weight_shift
                q_law[q_key] = q_law.get(q_key, 0.0) + weight * weight_shift
    growth = math.exp(epsilon)
    keys = set(p_law) | set(q_law)
    forward = sum(max(0.0, p_law.get(k, 0) - growth * q_law.get(k, 0)) for k in keys)
    backward = sum(max(0.0, q_law.get(k, 0) - growth * p_law.get(k, 0)) for k in keys)
    return max(forward, backward)


@pytest.mark.parametrize(
    "users, epsilon0, expected",
    [(100, 0.1, 0.0883), (100, 0.5, 0.444), (1000, 0.5, 0.1568), (1000, 1.0, 0.3461), (10**4, 1.0, 0.1210)],
)
def test_closed_form_reference_values(users, epsilon0, expected):
    # Reference values of Lemma B.4 (Chowdhury & Zhou 2022), docs/PAPER_NOTES.md, PN-CZ-5, delta' = 0.05.
    assert amp.closed_form_epsilon(epsilon0, users, 0.05) == pytest.approx(expected, abs=6e-5)


def test_closed_form_precondition_is_checked_not_assumed():
    assert not amp.closed_form_precondition(0.0, 20, 0.05)  # needs n >= 16 ln(40) = 59
    with pytest.raises(PreconditionFailed, match="epsilon0"):
        amp.closed_form_epsilon(0.1, 20, 0.05)
    assert amp.shuffled_delta(0.1, 0.5, 20, method="closed-form") == 1.0  # no guarantee beyond eps0


@pytest.mark.parametrize("users, epsilon0", [(5, 1.0), (12, 2.0), (9, 0.5)])
def test_numeric_bound_equals_enumerated_fmt_pair(users, epsilon0):
    for epsilon in (0.0, 0.2, 0.45):
        enumerated = fmt_pair_delta_by_enumeration(epsilon, epsilon0, users)
        numeric = amp.numeric_delta(epsilon, epsilon0, users)
        assert numeric >= enumerated
        assert numeric == pytest.approx(enumerated, rel=1e-8, abs=1e-14)


@pytest.mark.parametrize("users, epsilon0", [(100, 1.0), (1000, 2.0), (1000, 0.5), (10**4, 3.0), (300, 4.0)])
def test_numeric_between_exact_randomized_response_and_closed_form(users, epsilon0):
    for epsilon in (0.05, 0.2, 0.4):
        if epsilon >= epsilon0:
            continue
        numeric = amp.numeric_delta(epsilon, epsilon0, users)
        worst_rr = max(
            randomized_response_delta(epsilon, epsilon0, users, ones) for ones in (0, users // 2, users - 1)
        )
        assert worst_rr <= numeric
        assert numeric <= amp.shuffled_delta(epsilon, epsilon0, users, method="closed-form")
    for delta in (1e-4, 1e-7):
        numeric_eps = amp.shuffled_epsilon(delta, epsilon0, users, method="numeric")
        closed_eps = amp.shuffled_epsilon(delta, epsilon0, users, method="closed-form")
        assert numeric_eps <= closed_eps <= epsilon0
        assert (
            max(randomized_response_delta(numeric_eps, epsilon0, users, o) for o in (0, users - 1)) <= delta
        )


@pytest.mark.parametrize("method", ["closed-form", "numeric"])
def test_largest_local_epsilon_is_largest(method):
    epsilon, delta, users = 0.5, 1e-6, 5000
    epsilon0 = amp.largest_local_epsilon(epsilon, delta, users, method)
    assert amp.shuffled_epsilon(delta, epsilon0, users, method=method) <= epsilon
    assert amp.shuffled_epsilon(delta, epsilon0 * 1.001, users, method=method) > epsilon


def test_approximate_ldp_adds_the_thm_3_8_term():
    users, epsilon0, delta0 = 1000, 1.0, 1e-9
    pure = amp.numeric_delta(0.3, epsilon0, users)
    approx = amp.shuffled_delta(0.3, epsilon0, users, delta0=delta0, method="numeric")
    assert approx == pytest.approx(pure + (math.exp(0.3) + 1) * (1 + math.exp(-1) / 2) * users * delta0)


def test_certificate_round_trip_and_tampering():
    certificate = amplification_certificate(1.0, 1000, delta=1e-6, method="numeric")
    assert Certificate.from_json(certificate.to_json()) == certificate
    tampered = certificate.to_dict()
    tampered["parameters"]["users"] = 100
    with pytest.raises(CertificateMismatch):
        Certificate.from_dict(tampered)


def test_shuffle_protocol_with_randomized_response():
    epsilon0, users = 1.5, 400
    keep = math.exp(epsilon0) / (1 + math.exp(epsilon0))

    def randomizer(bits, rng):
        return np.where(rng.random(bits.shape) < keep, bits, 1 - bits)

    protocol = ShuffleProtocol(randomizer, np.sum, approximate_dp_certificate(epsilon0, trust_model="local"))
    certificate = protocol.certificate(users, delta=1e-6)
    exact_rr = max(randomized_response_delta(certificate.epsilon, epsilon0, users, o) for o in (0, users - 1))
    assert exact_rr <= 1e-6
    rng = np.random.default_rng(2)
    bits = (np.arange(users) < 100).astype(int)
    counts = np.array([protocol.run(bits, rng) for _ in range(3000)])
    expected = 100 * keep + 300 * (1 - keep)
    _, p_value = ztest(counts, value=expected)
    assert p_value > LEVEL


# --------------------------------------------------------------------------- P_Amp
def test_pamp_paper_constants_and_lemma_b4():
    # docs/PAPER_NOTES.md, PN-CZ-5
    assert pamp_paper_sigma(0.05, 1e-5, 1000) == pytest.approx(54.97, rel=1e-3)
    assert pamp_paper_sigma(0.1, 1e-5, 1000) == pytest.approx(27.48, rel=1e-3)
    assert pamp_paper_sigma(1.0, 0.1, 20) == pytest.approx(5.458, rel=1e-3)
    paper = calibrate_pamp(0.05, 1e-5, users=1000, dimension=5, method="paper")
    assert paper.certificate.epsilon == pytest.approx(0.2335, abs=1e-4)
    assert paper.certificate.delta == pytest.approx(3.48e-5, rel=2e-3)
    assert local_delta(paper.epsilon0, paper.sigma) <= paper.delta0
    with pytest.raises(PreconditionFailed, match="epsilon0 <= 1"):
        calibrate_pamp(1.0, 0.1, users=20, dimension=5, method="paper")


def test_pamp_exact_calibrations_beat_the_paper_at_its_own_guarantee():
    paper = calibrate_pamp(0.05, 1e-5, users=1000, dimension=5, method="paper")
    target = paper.certificate.guarantee
    closed = calibrate_pamp(target.epsilon, target.delta, users=1000, dimension=5, method="closed-form")
    numeric = calibrate_pamp(target.epsilon, target.delta, users=1000, dimension=5, method="numeric")
    assert numeric.sigma <= closed.sigma <= paper.sigma
    for result in (closed, numeric):
        assert result.certificate.verify().guarantee.covers(target)
        assert local_delta(result.epsilon0, result.sigma) <= result.delta0
    tampered = numeric.certificate.to_dict()
    tampered["parameters"]["sigma"] = numeric.sigma / 2
    with pytest.raises(CertificateMismatch):
        Certificate.from_dict(tampered)


def test_gaussian_shuffle_sum_unbiased_and_simulation_matches_messages():
    rng = np.random.default_rng(8)
    users, dimension, sigma = 50, 3, 0.7
    vectors = rng.normal(size=(users, dimension))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) * 1.5
    matrices = np.einsum("ni,nj->nij", vectors, vectors)
    certificate = approximate_dp_certificate(1.0, 1e-6, trust_model="shuffle")
    mechanism = GaussianShuffleSum(sigma, users, dimension, certificate)
    repetitions = 4000
    batch_v = np.broadcast_to(vectors, (repetitions, users, dimension))
    batch_m = np.broadcast_to(matrices, (repetitions, users, dimension, dimension))
    vector_sums, matrix_sums = mechanism.simulate(batch_v, batch_m, rng)
    errors = vector_sums[:, 0] - vectors[:, 0].sum()
    _, p_mean = ztest(errors, value=0.0)
    _, p_var = ztest(errors**2, value=users * sigma**2)
    assert p_mean > LEVEL and p_var > LEVEL
    noisy_v, noisy_m = mechanism.randomize(batch_v, batch_m, rng)
    shuffled = mechanism.shuffle_matrices(noisy_m, rng)
    np.testing.assert_allclose(shuffled, np.swapaxes(shuffled, -1, -2))
    originals = {tuple(np.round(m.ravel(), 12)) for m in noisy_m[0]}
    assert {tuple(np.round(m.ravel(), 12)) for m in shuffled[0]} == originals  # whole messages moved
    from_messages = shuffled.sum(axis=1)[:, 0, 1]
    assert stats.ks_2samp(from_messages, matrix_sums[:, 0, 1]).pvalue > LEVEL
    assert (
        stats.ks_2samp(mechanism.shuffle_vectors(noisy_v, rng).sum(axis=1)[:, 2], vector_sums[:, 2]).pvalue
        > LEVEL
    )


def test_command_line_contract(capsys):
    import json

    from dpcert.cli import main

    assert (
        main(["calibrate", "shuffle", "--epsilon", "1", "--delta", "1e-6", "--users", "1000", "--json"]) == 0
    )
    payload = json.loads(capsys.readouterr().out)
    assert set(payload) >= {"epsilon0", "certificate"}
    epsilon0 = payload["epsilon0"]
    assert (
        main(
            [
                "account",
                "shuffle",
                "--epsilon0",
                str(epsilon0),
                "--users",
                "1000",
                "--delta",
                "1e-6",
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["epsilon"] <= 1.0
    assert main(["account", "shuffle", "--epsilon0", "1", "--users", "0", "--delta", "1e-6"]) == 2
    assert "users" in capsys.readouterr().err


@pytest.mark.parametrize("method", ["closed-form", "numeric"])
def test_certificates_at_any_delta_re_verify(method):
    """Least-ε certificates land on the safe side of the profile they are re-verified against."""
    for epsilon0 in (0.3, 1.0, 3.0):
        for users in (50, 1000, 20_000):
            for delta in (1e-3, 1e-7):
                certificate = amplification_certificate(epsilon0, users, delta=delta, method=method)
                assert certificate.epsilon <= epsilon0
                assert amp.shuffled_delta(certificate.epsilon, epsilon0, users, method=method) <= delta


def test_numeric_epsilon_with_local_delta_is_the_least_point_of_its_own_profile():
    """With δ0 > 0 the δ0 term grows with ε: the inverse must search below ε0, not stop at ε0
    (P_Amp at B = 1000 users, target (0.2, 0.1) once returned ε0 = 3.26 for a profile meeting 0.2)."""
    from dpcert.theory.amplification import approximate_term, numeric_delta, numeric_epsilon

    epsilon0, delta0, users, delta = 3.258203333102713, 2.208365970032883e-05, 1000, 0.1

    def total(e):
        return numeric_delta(e, epsilon0, users) + approximate_term(e, epsilon0, delta0, users)

    found = numeric_epsilon(delta, epsilon0, users, delta0)
    assert found < 0.21
    assert total(found) <= delta
    assert total(found * (1 - 1e-6)) > delta  # the least such point, to the search's tolerance
    # a grid scan agrees: no smaller grid point meets delta
    grid = np.linspace(0.0, found, 200, endpoint=False)
    assert all(total(e) > delta for e in grid)
