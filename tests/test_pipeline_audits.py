"""End-to-end privacy audits: shuffled views of the bit sums, whole bandit runs, coupled transcripts.

Oracles: the exact hockey-stick divergence of the view's count PMFs (white-box), the certificates' own
profiles (a second method: closed form δ_N(ε) of docs/PAPER_NOTES.md, PN-TKMS-2, or the exact
binomial accounting of the bit sum), brute-force enumeration of randomized rounding, chi-square
goodness of fit of sampled views against the exact PMFs, and seeded black-box audits (Clopper–Pearson
lower bounds on ε at confidence 1 − α; a correctly calibrated mechanism is reported "violated" with
probability at most α, so every "consistent" assertion below has false-positive rate α = 1e-3).
Negative controls ("violated") are seeded and have power by construction: their exact δ at the claimed ε
is asserted to exceed 0.1 where it is computable, or the outputs on the two inputs are disjoint.  Coupled
runs with common random numbers (whole runs of Tenenbaum et al. 2021 and of Charisopoulos, Esfandiari &
Mirrokni 2023) are exact comparisons.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
import pytest
from scipy import stats

from dpcert.audits import audit, audit_samples
from dpcert.audits.exact import DiscretePair
from dpcert.audits.pipelines import (
    ShuffledViewCount,
    UserPopulation,
    binary_sum_view,
    bit_sum_view,
    elimination_pipeline,
    released_statistic,
    view_count,
)
from dpcert.audits.sampling import SamplePair
from dpcert.bandits.algorithms.mab import (
    BatchSchedule,
    CentralLaplaceSum,
    ExactSum,
    ShuffleBinarySum,
    batched_arm_elimination,
)
from dpcert.bandits.algorithms.robust_elimination import LaplaceClients, LinearArms, robust_elimination
from dpcert.certificates import Certificate
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.shuffle.binary_sum import BinarySum, binary_sum_delta, calibrate_binary_sum
from dpcert.mechanisms.shuffle.binomial_sum import (
    BinomialSumMechanism,
    BitSumParameters,
    calibrate_binomial_sum,
)
from dpcert.session import PrivacySession

CONFIDENCE = 0.999  # α = 1e-3: false-positive rate of each "consistent" verdict
CHI_SQUARE_LEVEL = 1e-4  # false-positive rate of each goodness-of-fit test
EPSILON, DELTA = 1.0, 1e-6
EPSILON_GRID = (0.0, 0.25, 0.5, 1.0, 2.0)


def chi_square_p_value(counts_observed: np.ndarray, pmf: np.ndarray, minimum_expected: float = 5.0) -> float:
    """Pearson goodness of fit of ``counts_observed`` (per outcome) to ``pmf``, sparse tail cells pooled."""
    expected = pmf * counts_observed.sum()
    large = expected >= minimum_expected
    observed = np.append(counts_observed[large], counts_observed[~large].sum())
    expected = np.append(expected[large], expected[~large].sum())
    if expected[-1] < minimum_expected:  # fold the pooled remainder into the largest cell
        observed[np.argmax(expected[:-1])] += observed[-1]
        expected[np.argmax(expected[:-1])] += expected[-1]
        observed, expected = observed[:-1], expected[:-1]
    return float(stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue)


# =========================================================================== Tenenbaum et al. 2021 binary sum
@pytest.fixture(scope="module")
def calibrated_binary_sum() -> BinarySum:
    return calibrate_binary_sum(EPSILON, DELTA).mechanism()


BATCH_A = np.zeros(6, dtype=int)  # x = 0^m and x' = (1, 0^{m-1})
BATCH_B = np.array([1, 0, 0, 0, 0, 0])


def test_binary_sum_view_profile_equals_the_certificate(calibrated_binary_sum):
    view = binary_sum_view(BATCH_A, BATCH_B, calibrated_binary_sum.noise_bits)
    certificate = calibrated_binary_sum.certificate
    for epsilon in EPSILON_GRID:
        exact = view.delta_for(epsilon)
        claimed = certificate.delta_for(epsilon)
        assert exact <= claimed  # the certificate is never optimistic
        assert exact == pytest.approx(claimed, rel=1e-9)  # and exact: the count is the whole view
    assert view.delta_for(EPSILON) <= DELTA


def test_binary_sum_view_matches_brute_force_over_shuffled_views():
    # enumerate every coin outcome and every permutation class: the shuffled view is the sorted tuple
    bits_a, bits_b, noise_bits = np.array([0, 1]), np.array([1, 1]), 3
    views = {}
    for name, bits in (("a", bits_a), ("b", bits_b)):
        pmf: dict[tuple[int, ...], float] = {}
        for coins in itertools.product((0, 1), repeat=noise_bits):
            view = tuple(sorted((*bits.tolist(), *coins)))
            pmf[view] = pmf.get(view, 0.0) + 0.5**noise_bits
        views[name] = pmf
    outcomes = sorted(set(views["a"]) | set(views["b"]))
    brute = DiscretePair(
        tuple(outcomes),
        np.array([views["a"].get(o, 0.0) for o in outcomes]),
        np.array([views["b"].get(o, 0.0) for o in outcomes]),
    )
    counted = binary_sum_view(bits_a, bits_b, noise_bits)
    for epsilon in EPSILON_GRID:
        assert counted.delta_for(epsilon) == pytest.approx(brute.delta_for(epsilon), abs=1e-15)
        assert counted.delta_for(epsilon) == pytest.approx(binary_sum_delta(epsilon, noise_bits), rel=1e-9)


def test_materialized_binary_sum_view_follows_the_exact_count_pmf(calibrated_binary_sum):
    rng = np.random.default_rng(2001)
    messages = calibrated_binary_sum.materialize(np.broadcast_to(BATCH_B, (20_000, BATCH_B.size)), rng)
    assert messages.shape == (20_000, BATCH_B.size + calibrated_binary_sum.noise_bits)
    pair = binary_sum_view(BATCH_A, BATCH_B, calibrated_binary_sum.noise_bits)
    counts = np.bincount(view_count(messages), minlength=len(pair.outcomes))
    assert chi_square_p_value(counts, pair.q) > CHI_SQUARE_LEVEL


def test_sampled_audit_of_the_binary_sum_view_is_consistent(calibrated_binary_sum):
    report = audit(
        ShuffledViewCount(calibrated_binary_sum),
        BATCH_A,
        BATCH_B,
        samples=200_000,
        seed=11,
        confidence=CONFIDENCE,
        batch_size=100_000,
    )
    assert report.claim.epsilon == EPSILON and report.claim.delta == DELTA  # the certificate's claim
    assert report.verdict == "consistent"


def test_sampled_audit_flags_an_under_noised_binary_sum(calibrated_binary_sum):
    # N = 4 fair bits claiming the certificate of the calibrated N = 80: exact δ_4(1) = 0.1426 (spec table)
    under_noised = BinarySum(4, calibrated_binary_sum.certificate)
    assert binary_sum_view(BATCH_A, BATCH_B, 4).delta_for(EPSILON) > 0.1
    report = audit(
        ShuffledViewCount(under_noised),
        BATCH_A,
        BATCH_B,
        samples=50_000,
        seed=12,
        confidence=CONFIDENCE,
    )
    assert report.verdict == "violated"


# =========================================================================== Cheu et al. bit sum
USERS = 5


@pytest.fixture(scope="module")
def calibrated_bit_sum() -> BinomialSumMechanism:
    return calibrate_binomial_sum(EPSILON, DELTA, users=USERS, dimension=1, bound=1.0).mechanism()


DATA_A = np.array([-1.0, 0.3, -0.2, 0.7, 0.0])  # user 0 moves across the whole range [−B, B]
DATA_B = np.array([1.0, 0.3, -0.2, 0.7, 0.0])


def test_randomized_rounding_pmf_matches_enumeration():
    parameters = BitSumParameters(g=4, b=3, p=0.5, users=3)
    mechanism = BinomialSumMechanism(parameters, calibrate_binomial_sum(1, 1e-3, users=3).certificate)
    data = np.array([-0.9, 0.05, 0.6])
    scaled = (data + 1.0) * 2.0  # u = (v + B)·g/(2B)
    floor, fraction = np.floor(scaled).astype(int), scaled - np.floor(scaled)
    brute = np.zeros(3 * 4 + 9 + 1)  # counts 0..n·g + n·b
    for rounding in itertools.product((0, 1), repeat=3):
        weight = np.prod(np.where(np.array(rounding) == 1, fraction, 1.0 - fraction))
        for noise in range(10):  # n·b = 9 noise bits in all
            brute[int(floor.sum()) + sum(rounding) + noise] += weight * stats.binom.pmf(noise, 9, 0.5)
    view = bit_sum_view(mechanism, data, data)
    np.testing.assert_allclose(view.p, brute, atol=1e-14)


def test_bit_sum_view_profile_is_within_the_certificate(calibrated_bit_sum):
    certificate = calibrated_bit_sum.certificate
    # other users on the encoding grid (u = g/2): user 0's count moves by exactly g, the worst case the
    # certificate accounts for, so the profile must be tight; off-grid users add rounding noise (below)
    on_grid = bit_sum_view(calibrated_bit_sum, [-1.0, 0, 0, 0, 0], [1.0, 0, 0, 0, 0])
    off_grid = bit_sum_view(calibrated_bit_sum, DATA_A, DATA_B)
    for epsilon in EPSILON_GRID:
        claimed = certificate.delta_for(epsilon)
        assert on_grid.delta_for(epsilon) <= claimed
        assert on_grid.delta_for(epsilon) == pytest.approx(claimed, rel=1e-6, abs=1e-15)
        assert off_grid.delta_for(epsilon) <= on_grid.delta_for(epsilon)
    assert off_grid.delta_for(EPSILON) <= DELTA


def test_materialized_bit_sum_view_follows_the_exact_count_pmf(calibrated_bit_sum):
    rng = np.random.default_rng(2002)
    draws = ShuffledViewCount(calibrated_bit_sum)(DATA_A, rng, size=15_000)
    pair = bit_sum_view(calibrated_bit_sum, DATA_A, DATA_B)
    counts = np.bincount(draws, minlength=len(pair.outcomes))
    assert chi_square_p_value(counts, pair.p) > CHI_SQUARE_LEVEL
    # and the count simulator draws the same law
    simulated = calibrated_bit_sum.simulate_counts(np.broadcast_to(DATA_A[:, None], (20_000, USERS, 1)), rng)
    counts = np.bincount(simulated[:, 0], minlength=len(pair.outcomes))
    assert chi_square_p_value(counts, pair.p) > CHI_SQUARE_LEVEL


def test_sampled_audit_of_the_bit_sum_view_is_consistent(calibrated_bit_sum):
    report = audit(
        ShuffledViewCount(calibrated_bit_sum),
        DATA_A,
        DATA_B,
        samples=100_000,
        seed=21,
        confidence=CONFIDENCE,
        batch_size=10_000,
    )
    assert report.claim == calibrated_bit_sum.certificate.guarantee
    assert report.verdict == "consistent"


def test_sampled_audit_flags_an_under_noised_bit_sum(calibrated_bit_sum):
    honest = calibrated_bit_sum.parameters
    weak = BitSumParameters(**{**honest.to_dict(), "b": 2})  # 2 noise bits per user instead of b
    under_noised = BinomialSumMechanism(weak, calibrated_bit_sum.certificate)
    assert bit_sum_view(under_noised, DATA_A, DATA_B).delta_for(EPSILON) > 0.1
    report = audit(
        ShuffledViewCount(under_noised), DATA_A, DATA_B, samples=50_000, seed=22, confidence=CONFIDENCE
    )
    assert report.verdict == "violated"


# =========================================================================== a whole bandit run
BATCH = 100
HORIZON = 2000
# Arm 0: users with index 1..c0 (mod BATCH) have reward 1, the others 0; arm 1 pays 0.  With exact sums
# the phase-1 elimination test (Tenenbaum et al. 2021, Alg. 1 line 16) keeps arm 1 iff
# s0 − s1 <= 2·sqrt(2 m log T): c0 is the largest sum that keeps it, so user 0's bit decides
# phase 1 when there is no noise.
ELIMINATION_EDGE = math.floor(2.0 * math.sqrt(2.0 * BATCH * math.log(HORIZON)))
_ARRIVAL = np.arange(HORIZON) % BATCH
POPULATION_A = np.stack(
    [(_ARRIVAL >= 1) & (_ARRIVAL <= ELIMINATION_EDGE), np.zeros(HORIZON, bool)], axis=1
).astype(int)
POPULATION_B = POPULATION_A.copy()
POPULATION_B[0, 0] = 1  # one user's data changed (replace-one)
PIPELINE_DRAWS = 100_000


@pytest.fixture(scope="module")
def calibrated_summation() -> ShuffleBinarySum:
    calibration = calibrate_binary_sum(EPSILON, DELTA)
    return ShuffleBinarySum(calibration.noise_bits, calibration.certificate)


def run_pipeline(summation, statistic: str, seed: int) -> SamplePair:
    pipeline = elimination_pipeline(summation, BATCH, statistic=statistic)
    rng = np.random.default_rng(seed)
    return SamplePair(
        pipeline(POPULATION_A, rng, size=PIPELINE_DRAWS), pipeline(POPULATION_B, rng, size=PIPELINE_DRAWS)
    )


def run_certificate(summation) -> Certificate:
    """The certificate the engine itself reports for a run with ``summation``."""
    population = UserPopulation(POPULATION_A)
    result = batched_arm_elimination(
        population, HORIZON, summation, BatchSchedule("fixed", BATCH), np.random.default_rng(0), runs=2
    )
    assert elimination_pipeline(summation, BATCH).certificate == result.certificate
    return result.certificate


def test_population_serves_the_users_the_ledger_is_charged_for(calibrated_summation):
    class RecordingLedger:
        def __init__(self) -> None:
            self.batches: set[tuple[int, int, int]] = set()

        def charge(self, user_ids, certificate, run_id=None):
            local = np.array([int(u.rsplit("/", 1)[1]) for u in user_ids])  # run·T + arrival index
            for batch in local.reshape(-1, BATCH):
                run, first = divmod(int(batch[0]), HORIZON)
                assert batch[-1] == run * HORIZON + first + BATCH - 1
                self.batches.add((run, first, first + BATCH))

    population, ledger = UserPopulation(POPULATION_A), RecordingLedger()
    batched_arm_elimination(
        population,
        HORIZON,
        calibrated_summation,
        BatchSchedule("fixed", BATCH),
        np.random.default_rng(3),
        runs=6,
        session=PrivacySession("audit", ledger),
    )
    served = {
        (int(run), int(start[run, arm]), int(end[run, arm]))
        for start, end in population.served
        for run, arm in zip(*np.nonzero(start >= 0), strict=True)
    }
    assert served == ledger.batches
    # every user is in at most one batch (docs/PAPER_NOTES.md, PN-TKMS-4)
    for run in range(6):
        intervals = sorted((first, last) for r, first, last in served if r == run)
        assert all(previous[1] <= current[0] for previous, current in itertools.pairwise(intervals))


def test_coupled_runs_differ_only_in_the_changed_users_batch(calibrated_summation):
    # common random numbers (PN-TKMS-4): only user 0's batch output may differ
    runs = 200
    results = []
    for population in (POPULATION_A, POPULATION_B):
        results.append(
            batched_arm_elimination(
                UserPopulation(population),
                HORIZON,
                calibrated_summation,
                BatchSchedule("fixed", BATCH),
                np.random.default_rng(5),
                runs=runs,
                record_phases=True,
            )
        )
    (first_a, second_a), (first_b, second_b) = (r.phase_records[:2] for r in results)
    np.testing.assert_allclose((first_b.estimates - first_a.estimates)[:, 0], 1.0 / BATCH, rtol=1e-12)
    np.testing.assert_array_equal(first_b.estimates[:, 1:], first_a.estimates[:, 1:])
    # runs whose phase-1 decisions agree keep both arms on the same users in phase 2: arm 1's estimate is
    # bit-identical and arm 0's still differs by user 0's bit only, now over 2m users
    both_viable = np.all(first_a.viable_after, axis=1) & np.all(first_b.viable_after, axis=1)
    assert both_viable.any()
    np.testing.assert_array_equal(second_a.estimates[both_viable, 1], second_b.estimates[both_viable, 1])
    np.testing.assert_allclose(
        (second_b.estimates - second_a.estimates)[both_viable, 0], 1.0 / (2 * BATCH), rtol=1e-9
    )


def test_first_estimate_of_the_run_is_the_binary_sum_output(calibrated_summation):
    pair = run_pipeline(calibrated_summation, "first-estimate", seed=31)
    noise_bits = calibrated_summation.noise_bits
    exact = binary_sum_view(POPULATION_A[:BATCH, 0], POPULATION_B[:BATCH, 0], noise_bits)
    for draws, pmf in ((pair.on_a, exact.p), (pair.on_b, exact.q)):
        counts = draws + noise_bits / 2.0  # the released debiased sum, shifted back to the count
        assert np.all(counts == np.round(counts))
        observed = np.bincount(counts.astype(np.int64), minlength=pmf.size)
        assert chi_square_p_value(observed, pmf) > CHI_SQUARE_LEVEL
    assert exact.delta_for(EPSILON) <= run_certificate(calibrated_summation).delta_for(EPSILON)


@pytest.mark.parametrize("statistic", ["pulls", "first-estimate"])
def test_bandit_run_audit_is_consistent_with_its_certificate(calibrated_summation, statistic):
    certificate = run_certificate(calibrated_summation)
    pair = run_pipeline(calibrated_summation, statistic, seed=41)
    report = audit_samples(pair, certificate.epsilon, certificate.delta, confidence=CONFIDENCE)
    assert (certificate.epsilon, certificate.delta) == (EPSILON, DELTA)
    assert report.verdict == "consistent"


@pytest.mark.parametrize("statistic", ["pulls", "first-estimate"])
def test_bandit_run_without_noise_is_caught(calibrated_summation, statistic):
    # negative control: noise removed, the calibrated certificate still claimed
    certificate = run_certificate(calibrated_summation)
    pair = run_pipeline(ExactSum(), statistic, seed=42)
    assert not np.array_equal(np.unique(pair.on_a), np.unique(pair.on_b))  # user 0 decides the output
    report = audit_samples(pair, certificate.epsilon, certificate.delta, confidence=CONFIDENCE)
    assert report.verdict == "violated"


def test_under_noised_bandit_run_is_caught(calibrated_summation):
    # negative control: 4 noise bits per batch while claiming the certificate of the calibrated 80
    certificate = run_certificate(calibrated_summation)
    pair = run_pipeline(ShuffleBinarySum(4), "first-estimate", seed=43)
    report = audit_samples(pair, certificate.epsilon, certificate.delta, confidence=CONFIDENCE)
    assert report.verdict == "violated"


def test_central_laplace_run_audit_is_consistent_and_tight():
    # the central-model baseline of the same engine: Laplace(1/ε) on each batch sum, pure ε-DP; at the
    # released phase-1 estimate user 0's bit is a sensitivity-1 shift, which Laplace makes exactly tight
    summation = CentralLaplaceSum(EPSILON)
    certificate = run_certificate(summation)
    pair = run_pipeline(summation, "first-estimate", seed=51)
    report = audit_samples(pair, certificate.epsilon, certificate.delta, confidence=CONFIDENCE)
    assert (certificate.epsilon, certificate.delta) == (EPSILON, 0.0)
    assert report.verdict == "consistent"
    assert report.epsilon_lower_bound >= 0.8 * EPSILON  # the audit has power here


def test_central_laplace_run_with_too_little_noise_is_caught():
    # negative control: Laplace(1/2.5) per batch while claiming the certificate of Laplace(1/1)
    claimed = run_certificate(CentralLaplaceSum(EPSILON))
    pair = run_pipeline(CentralLaplaceSum(2.5), "first-estimate", seed=52)
    report = audit_samples(pair, claimed.epsilon, claimed.delta, confidence=CONFIDENCE)
    assert report.verdict == "violated"


def test_pipeline_rejects_bad_inputs(calibrated_summation):
    with pytest.raises(InvalidParameter, match="statistic"):
        elimination_pipeline(calibrated_summation, BATCH, statistic="regret")
    with pytest.raises(InvalidParameter, match="rewards"):
        UserPopulation(np.full((10, 2), 0.5))
    with pytest.raises(InvalidParameter, match="bits_b"):
        binary_sum_view([0, 1], [0, 1, 1], 4)
    result = batched_arm_elimination(
        UserPopulation(POPULATION_A),
        HORIZON,
        calibrated_summation,
        BatchSchedule("fixed", BATCH),
        np.random.default_rng(0),
    )
    with pytest.raises(InvalidParameter, match="result"):
        released_statistic(result, "first-estimate")
    with pytest.raises(InvalidParameter, match="arm"):
        released_statistic(result, "pulls", arm=2)


# =========================================================================== robust elimination: coupled runs
@dataclass(frozen=True)
class RewardTable(LinearArms):
    """Linear arms whose rewards come from a fixed table, ``table[i, a]`` for the ``i``-th pull."""

    table: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    pulled: list = field(default_factory=list)

    def rewards(self, arm_indices: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        start = sum(block.size for block in self.pulled)
        users = np.arange(start, start + arm_indices.size)
        self.pulled.append(users)
        return self.table[users, arm_indices].astype(float)


def test_robust_elimination_coupled_transcripts_differ_only_through_one_report():
    # reward tables R, R' differing at the first pull j* = 0; common random numbers for
    # every client's Laplace noise.  All reports but j*'s are then bit-identical, so the phase-1 least-
    # squares fit moves by exactly M⁺ a_{j*} (clip(r') − clip(r)) and the phase-1 plays are identical.
    arms = np.array([[1.0, 0.0], [0.0, 1.0], [-0.6, 0.8], [0.6, 0.6]])
    horizon = 400
    table_a = np.where(np.random.default_rng(61).random((horizon, arms.shape[0])) < 0.6, 1.0, -1.0)
    table_b = table_a.copy()
    table_b[0] = -table_a[0]  # user 0's rewards on every arm flipped
    logs, instances = [], []
    for table in (table_a, table_b):
        instance = RewardTable(arms, np.array([0.6, 0.0]), table=table)
        result = robust_elimination(
            instance,
            horizon,
            np.random.default_rng(62),
            clients=LaplaceClients("M1", epsilon=EPSILON),
            estimator="least-squares",
            keep_logs=True,
        )
        logs.append(result.logs[0])
        instances.append(instance)
    first_a, first_b = logs[0][0], logs[1][0]
    np.testing.assert_array_equal(first_a.counts, first_b.counts)  # plays up to and in batch(j*)
    np.testing.assert_array_equal(instances[0].pulled[0], instances[1].pulled[0])
    support = np.flatnonzero(first_a.counts)
    rows = arms[np.repeat(support, first_a.counts[support])]
    changed_arm = support[0]  # the engine serves the first support arm to the first pulls
    shift = (
        np.linalg.pinv(rows.T @ rows)
        @ arms[changed_arm]
        * (table_b[0, changed_arm] - table_a[0, changed_arm])
    )
    np.testing.assert_allclose(first_b.estimates - first_a.estimates, arms @ shift, atol=1e-9)
