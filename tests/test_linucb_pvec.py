"""SDP-Vec (P_Vec bit sums) with returning users and user-supplied (g, b, p).

Brute-force references: on tiny instances the privacy loss of one coordinate, ``ln P(k)/Q(k)`` for
``P = Bin(T, p)`` and ``Q = P + g``, is tabulated from ``scipy.stats.binom`` and the composition of
several coordinates (and batches) is the exact distribution of the summed losses (numpy outer sums),
so ``δ(ε) = P(L = ∞) + Σ p_i (1 − e^{ε − L_i})_+`` is computed without any discretisation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpcert.accounting.composition import compose_counts
from dpcert.accounting.returning_users import split_budget
from dpcert.bandits.calibration.linucb import calibrate
from dpcert.certificates import Certificate, Guarantee
from dpcert.errors import DPCertError, InvalidParameter
from dpcert.mechanisms.shuffle.binomial_sum import (
    BinomialSumProfile,
    BitSumParameters,
    binomial_sum_certificate,
    calibrate_binomial_sum,
    least_noise_bits,
)
from dpcert.theory.pld import pld_self_composed_delta_for


# ----------------------------------------------------------------------------- brute force
def coordinate_losses(trials: int, p: float, shift: int, upward: bool) -> tuple[np.ndarray, np.ndarray]:
    """Exact privacy-loss law of one coordinate: losses (``inf`` allowed) and their probabilities."""
    k = np.arange(trials + shift + 1)
    first = stats.binom.pmf(k, trials, p)
    second = stats.binom.pmf(k - shift, trials, p)
    upper, lower = (first, second) if upward else (second, first)
    keep = upper > 0
    with np.errstate(divide="ignore"):
        losses = np.log(upper[keep]) - np.log(lower[keep])
    return losses, upper[keep]


def product_losses(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Exact loss law of independent coordinates (losses add, probabilities multiply)."""
    losses, probs = np.zeros(1), np.ones(1)
    for part_losses, part_probs in parts:
        losses = np.add.outer(losses, part_losses).ravel()
        probs = np.multiply.outer(probs, part_probs).ravel()
    return losses, probs


def exact_delta(losses: np.ndarray, probs: np.ndarray, epsilon: float) -> float:
    infinite = np.isinf(losses)
    finite = ~infinite & (losses > epsilon)
    return float(probs[infinite].sum() + (probs[finite] * -np.expm1(epsilon - losses[finite])).sum())


def exact_epsilon(losses: np.ndarray, probs: np.ndarray, delta: float) -> float:
    low, high = 0.0, float(losses[np.isfinite(losses)].max())
    for _ in range(80):
        middle = 0.5 * (low + high)
        low, high = (low, middle) if exact_delta(losses, probs, middle) <= delta else (middle, high)
    return high


# ----------------------------------------------------------------------------- composition
def test_pld_composition_of_bit_sum_batches_is_never_below_the_exact_composition():
    # 2 users x 5 noise bits, g = 2, a 2-dimensional vector: 2 coordinates per batch, 3 batches
    parameters = BitSumParameters(g=2, b=5, p=0.5, users=2, dimension=2, shape="vector")
    batch = binomial_sum_certificate(parameters, delta=0.05)
    assert callable(batch.profile.privacy_loss_parts)
    single = coordinate_losses(10, 0.5, 2, upward=True)
    losses, probs = product_losses([single] * 6)
    composed = compose_counts([(batch, 3)], method="pld", delta=0.3)
    for epsilon in np.linspace(0.0, 6.0, 25):
        assert composed.delta_for(epsilon) >= exact_delta(losses, probs, epsilon)
    truth = exact_epsilon(losses, probs, 0.3)
    assert truth <= composed.epsilon <= truth + 0.01  # pessimistic grid 1e-4: 6 roundings at most
    # the black-box optimal composition of the batch's (ε, δ) claim is valid but looser
    assert compose_counts([(batch, 3)], method="optimal", delta=0.3).epsilon > composed.epsilon


def test_the_dominating_pair_is_symmetric_for_p_one_half():
    # Reversing the pair leaves the exact profile unchanged (why one PLD covers both directions)
    up = coordinate_losses(12, 0.5, 3, upward=True)
    down = coordinate_losses(12, 0.5, 3, upward=False)
    for epsilon in (0.0, 0.3, 1.0, 2.5):
        assert exact_delta(*up, epsilon) == pytest.approx(exact_delta(*down, epsilon), rel=1e-12, abs=1e-15)


def test_p_other_than_one_half_composes_through_its_claim_and_stays_above_every_orientation():
    parameters = BitSumParameters(g=1, b=10, p=0.25, users=2, dimension=1, shape="vector")
    profile = BinomialSumProfile(parameters.to_dict())
    assert not profile.has_dominating_pair and not hasattr(profile, "privacy_loss_parts")
    batch = binomial_sum_certificate(parameters, delta=0.05)
    composed = compose_counts([(batch, 2)], method="best", delta=0.2)
    up = coordinate_losses(20, 0.25, 1, upward=True)
    down = coordinate_losses(20, 0.25, 1, upward=False)
    splits = [[up, up], [up, down], [down, down]]  # each batch may shift either way
    for epsilon in np.linspace(0.0, 5.0, 21):
        worst = max(exact_delta(*product_losses(parts), epsilon) for parts in splits)
        assert composed.delta_for(epsilon) >= worst
    with pytest.raises(InvalidParameter, match="p"):
        least_noise_bits(1.0, 0.1, parameters, compositions=2)


# ----------------------------------------------------------------------------- tight split
def test_tight_returning_user_split_gives_each_batch_at_least_the_paper_budget():
    claim, batch_size, dimension, participations = Guarantee(1.0, 0.1), 20, 2, 4
    common = dict(epsilon=1.0, delta=0.1, horizon=80, batch_size=batch_size, dimension=dimension)
    tight = calibrate("linucb-sdp-vec", participations=participations, **common)
    split = split_budget(claim, participations)
    eps_m, delta_m = split.paper.epsilon, split.paper.delta
    assert eps_m == pytest.approx(1.0 / (2.0 * math.sqrt(2.0 * 4 * math.log(20.0))))  # Thm E.2
    # each batch may spend at least the paper's (ε_m, δ_m) ...
    assert tight.batch_certificate.epsilon_for(delta_m) >= eps_m
    # ... i.e. no more noise bits than the paper split calibrated exactly with the same g and p
    per_batch = calibrate_binomial_sum(
        eps_m, delta_m, users=batch_size, dimension=dimension, shape="vector+matrix", g=5, p=0.5
    )
    assert (tight.noise["g"], tight.noise["p"]) == (5, 0.5)
    assert tight.noise["b"] <= per_batch.b
    # the user-level certificate meets the claim, and one bit fewer would not (least b)
    assert tight.claim_met and 0.95 <= tight.certificate.epsilon <= 1.0
    assert tight.certificate.neighbouring.value == tight.batch_certificate.neighbouring.value == "replace-one"
    fewer = BinomialSumProfile({**tight.batch_certificate.parameters, "b": tight.noise["b"] - 1})
    interval = tight.certificate.parameters["value_discretization_interval"]
    ((single, coordinates),) = fewer.privacy_loss_parts(interval)
    assert pld_self_composed_delta_for(single, coordinates * participations, 1.0) > 0.1
    Certificate.from_json(tight.certificate.to_json())  # re-derived from its components


def test_paper_split_per_batch_parameters_follow_thm_3_5_and_the_certificate_holds():
    common = dict(epsilon=1.0, delta=0.1, horizon=80, batch_size=20, dimension=2, participations=4)
    paper = calibrate("linucb-sdp-vec", calibration="paper", **common)
    eps_m, delta_m = 1.0 / (2.0 * math.sqrt(8.0 * math.log(20.0))), 0.1 / 8
    g = 9  # max(2 sqrt(20), d, 4) rounded up
    b = math.ceil(24e4 * g * g * math.log(4.0 * 5 / delta_m) ** 2 / (eps_m**2 * 20))
    assert paper.noise == {"g": g, "b": b, "p": 0.25}
    assert paper.claim_met and paper.certificate.epsilon <= 1.0
    tight = calibrate("linucb-sdp-vec", **common)
    assert tight.noise["b"] < paper.noise["b"]


# ----------------------------------------------------------------------------- ledger
def test_returning_user_ledger_totals_for_a_small_sdp_vec_run(tmp_path):
    from dpcert.bandits import registry
    from dpcert.bandits.registry import RunConfig
    from dpcert.ledger.api import Ledger

    horizon, batch, participations = 200, 20, 4
    config = RunConfig(
        "linucb-sdp-vec",
        privacy="shuffle",
        epsilon=1.0,
        delta=0.1,
        horizon=horizon,
        runs=2,
        options={"participations": participations, "dimension": 2, "arms": 5},
        ledger_path=tmp_path / "ledger.sqlite",
    )
    run = registry.algorithm("linucb-sdp-vec").run(config)
    # 10 batches; users of group k sit in batches 4k..4k+3: two full groups of 4, one group of 2
    assert run.users == 3 * batch and run.extras["max_charges_per_user"] == participations
    calibrated = calibrate(
        "linucb-sdp-vec",
        epsilon=1.0,
        delta=0.1,
        horizon=horizon,
        batch_size=batch,
        dimension=2,
        participations=participations,
    )
    one = calibrated.batch_certificate.epsilon_for(0.1)
    # the SQLite ledger holds one event-level charge per participation; compose them independently
    with Ledger(config.ledger_path) as stored:
        users = stored.users()
        assert len(users) == 2 * 3 * batch
        histories = {u: [c.certificate for c in stored.charges(u)] for u in users}
    assert sorted({len(h) for h in histories.values()}) == [2, 4]
    spent = {
        len(h): compose_counts(
            [(h[0], len(h))], delta=0.1, value_discretization_interval=calibrated.interval
        ).epsilon_for(0.1)
        for h in histories.values()
        if all(c == h[0] for c in h)
    }
    assert one < spent[2] < spent[4] <= 1.0  # composing more batches never costs less
    assert spent[4] == pytest.approx(run.max_user_epsilon, rel=1e-9) and run.target_met


# ----------------------------------------------------------------------------- user-supplied noise
def test_user_supplied_bit_sum_gets_an_honest_certificate():
    # 2 users, g = 1, b = 8, p = 1/2, d = 2: 5 coordinates of Bin(16, 1/2) vs +1, exactly enumerable
    supplied = calibrate(
        "linucb-sdp-vec",
        epsilon=1.0,
        delta=0.1,
        horizon=4,
        batch_size=2,
        dimension=2,
        bit_sum={"g": 1, "b": 8},
    )
    assert supplied.noise == {"g": 1, "b": 8, "p": 0.5}
    losses, probs = product_losses([coordinate_losses(16, 0.5, 1, upward=True)] * 5)
    truth = exact_epsilon(losses, probs, 0.1)
    assert truth <= supplied.certificate.epsilon <= truth + 0.01
    assert exact_delta(losses, probs, 1.0) > 0.1 and not supplied.claim_met  # the claim fails: said so
    assert "user-supplied (g, b, p)" in supplied.certificate.notes
    # the tight calibration's own (g, b, p), supplied by hand, earn the claim
    common = dict(epsilon=1.0, delta=0.1, horizon=80, batch_size=20, dimension=2, participations=2)
    tight = calibrate("linucb-sdp-vec", **common)
    again = calibrate("linucb-sdp-vec", bit_sum=tight.noise, **common)
    assert again.claim_met and again.certificate.epsilon <= 1.0


@pytest.mark.parametrize(
    "bit_sum",
    [
        {"b": 0},
        {"b": 10, "p": 1.5},
        {"b": 10, "p": 0.0},
        {"b": 10, "g": 0},
        {"b": 2.5},
        {"g": 5},
        {"b": 10, "q": 1},
        {"b": 1, "g": 8},  # no finite epsilon at delta: refused, naming b
    ],
)
def test_bad_bit_sum_settings_raise(bit_sum):
    with pytest.raises(DPCertError):
        calibrate(
            "linucb-sdp-vec", epsilon=1.0, delta=0.1, horizon=40, batch_size=20, dimension=2, bit_sum=bit_sum
        )


def test_noise_settings_of_the_wrong_kind_raise():
    common = dict(epsilon=1.0, delta=0.1, horizon=40, batch_size=20, dimension=2)
    with pytest.raises(InvalidParameter, match="sigma"):
        calibrate("linucb-sdp-vec", sigma=3.0, **common)
    with pytest.raises(InvalidParameter, match="bit_sum"):
        calibrate("linucb-sdp-amp", bit_sum={"b": 10}, **common)
    with pytest.raises(InvalidParameter, match="horizon"):
        calibrate("linucb-sdp-vec", **{**common, "horizon": 50}, participations=2)
