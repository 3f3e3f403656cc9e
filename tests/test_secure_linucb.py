"""Integer-exact Gaussian noise for LDP- and JDP-LinUCB, certified by the ℓ2 discrete Gaussian (zCDP).

References are independent of the code under test: the exact one-dimensional discrete Gaussian
profile (CKS 2020, Thm 7, summed by :mod:`dpcert.mechanisms.discrete_gaussian`), a direct numerical
minimisation of the CKS 2020 Cor. 13 expression, exact sums over the integers for the Rényi
divergence, variance and moment generating function, and the continuous Gaussian's exact profile.
Statistical tests are seeded; each states its false-positive rate.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp

from dpcert.bandits.algorithms import linucb, linucb_privatizers, linucb_secure
from dpcert.bandits.algorithms.linucb import JOINT_SENSITIVITY, run_batched_linucb
from dpcert.bandits.algorithms.linucb_privatizers import LocalGaussianRandomizer, TreeGaussian, statistic_size
from dpcert.bandits.algorithms.linucb_secure import FINE_BITS, SecureLocalGaussian, SecureTreeGaussian
from dpcert.bandits.calibration.linucb import calibrate
from dpcert.bandits.calibration.linucb_secure import calibrate_secure
from dpcert.bandits.environments.contextual import vaswani_instance
from dpcert.bandits.registry import RunConfig
from dpcert.bandits.runner import run_linucb_config
from dpcert.certificates import Certificate
from dpcert.cli import main
from dpcert.errors import BudgetExceeded, CertificateMismatch, InvalidParameter
from dpcert.mechanisms.discrete_gaussian import discrete_gaussian_delta
from dpcert.mechanisms.discrete_gaussian_l2 import (
    DiscreteGaussianL2Profile,
    discrete_gaussian_l2_certificate,
    grid_l2_sensitivity,
    least_l2_sigma_units,
    secure_l2_gaussian,
)
from dpcert.mechanisms.gaussian import gaussian_certificate
from dpcert.mechanisms.secure import samplers as exact_samplers
from dpcert.mechanisms.secure.noise import Grid, secure_gaussian


def _log_masses(sigma: float, reach: float) -> tuple[np.ndarray, np.ndarray]:
    y = np.arange(-math.ceil(reach), math.ceil(reach) + 1, dtype=float)
    log_mass = -(y * y) / (2 * sigma * sigma)
    return y, log_mass - logsumexp(log_mass)


# ----------------------------------------------------------------------------- the certificate
@pytest.mark.parametrize("sigma, shift", [(0.8, 1), (2.0, 1), (5.0, 3), (20.0, 7)])
def test_one_coordinate_is_never_below_the_exact_discrete_gaussian_profile(sigma, shift):
    profile = DiscreteGaussianL2Profile({"sigma": sigma, "l2_sensitivity": shift, "coordinates": 1})
    for epsilon in (0.05, 0.3, 1.0, 2.0, 4.0):
        exact = discrete_gaussian_delta(epsilon, sigma, shift)
        assert profile.delta_for(epsilon) >= exact
    # and not far above it where δ is small: zCDP loses a little, not orders of magnitude
    assert profile.delta_for(1.0) <= 50.0 * discrete_gaussian_delta(1.0, sigma, shift) + 1e-300


@pytest.mark.parametrize("rho, epsilon", [(0.01, 0.5), (0.1, 1.0), (0.5, 3.0), (2.0, 1.0), (1e-4, 0.1)])
def test_zcdp_conversion_matches_a_direct_minimisation(rho, epsilon):
    def log_delta(alpha: float) -> float:  # CKS 2020, Cor. 13, written out independently
        return (alpha - 1) * (alpha * rho - epsilon) - math.log(alpha) + (alpha - 1) * math.log(1 - 1 / alpha)

    grid = np.exp(np.linspace(math.log(1 + 1e-9), math.log(1e4), 200_001))
    values = np.array([log_delta(a) for a in grid[::100]])
    start = grid[::100][int(np.argmin(values))]
    best = minimize_scalar(log_delta, bounds=(max(1 + 1e-12, start / 1.1), start * 1.1), method="bounded",
                           options={"xatol": 1e-12})  # fmt: skip
    reference = min(1.0, math.exp(min(best.fun, values.min())))
    profile = DiscreteGaussianL2Profile(
        {"sigma": 1.0, "l2_sensitivity": math.sqrt(2 * rho), "coordinates": 4}
    )
    assert profile.rho == pytest.approx(rho, rel=1e-11)
    assert profile.delta_for(epsilon) >= reference * (1 - 1e-12)  # never claims less than the minimum
    assert profile.delta_for(epsilon) == pytest.approx(reference, rel=1e-6)


@pytest.mark.parametrize(
    "sigma, shift, alpha", [(1.0, 1, 2.0), (3.0, 2, 5.0), (10.0, 13, 1.5), (0.6, 1, 8.0)]
)
def test_renyi_divergence_of_integer_shifts_is_at_most_the_continuous_one(sigma, shift, alpha):
    """The premise of CKS 2020, Thm 14: D_α(N_Z(0, σ²) ‖ N_Z(k, σ²)) <= α k²/(2σ²), by exact summation."""
    y, log_p = _log_masses(sigma, 40 * sigma + shift + 10)
    log_q = np.interp(y - shift, y, log_p, left=-np.inf, right=-np.inf)  # N_Z(k, σ²) at y
    inside = np.isfinite(log_q)
    divergence = logsumexp(alpha * log_p[inside] + (1 - alpha) * log_q[inside]) / (alpha - 1)
    assert 0 < divergence <= alpha * shift**2 / (2 * sigma**2) * (1 + 1e-12)


@pytest.mark.parametrize("sigma", [0.7, 2.0, 9.0])
def test_discrete_gaussian_variance_and_subgaussian_moments(sigma):
    """Var <= σ² and E e^{tX} <= e^{t²σ²/2} (exact sums): what the confidence radius relies on."""
    y, log_p = _log_masses(sigma, 60 * sigma + 10)
    # the gap is ~e^(-2π²σ²) relative, below float resolution from σ ≈ 1.5 on
    assert float(np.exp(logsumexp(log_p, b=y * y))) <= sigma**2 * (1 + 1e-12)
    for t in (0.01, 0.3, 1.0, 3.0):
        assert logsumexp(log_p + t * y) <= t * t * sigma**2 / 2 + 1e-12


def test_continuous_gaussian_at_the_same_sigma_is_a_lower_reference():
    for sigma, shift, k in [(30.0, 12.0, 1), (200.0, 40.0, 11), (8.0, 2.5, 3)]:
        certificate = discrete_gaussian_l2_certificate(
            sigma, l2_sensitivity=shift, coordinates=20, compositions=k, delta=1e-6
        )
        continuous = gaussian_certificate(sigma, sensitivity=shift, compositions=k, delta=1e-6)
        assert certificate.epsilon >= continuous.epsilon
        assert certificate.epsilon <= 1.2 * continuous.epsilon  # the zCDP conversion costs little here
        assert Certificate.from_json(certificate.to_json()).guarantee == certificate.guarantee


def test_calibration_is_the_least_whole_step_sigma():
    for epsilon, delta, shift, k in [(1.0, 1e-5, 1090.6, 11), (0.3, 1e-8, 17.3, 1), (4.0, 1e-3, 5000.0, 40)]:
        units = least_l2_sigma_units(epsilon, delta, shift, k)

        def delta_at(sigma, epsilon=epsilon, shift=shift, k=k):
            return DiscreteGaussianL2Profile(
                {"sigma": sigma, "l2_sensitivity": shift, "coordinates": 5, "compositions": k}
            ).delta_for(epsilon)

        assert delta_at(float(units)) <= delta < delta_at(float(units - 1))


def test_rounding_moves_an_l2_shift_by_at_most_root_m_steps():
    rng = np.random.default_rng(11)
    grid = Grid(-3)
    m, sensitivity = 20, 2.0
    bound = grid_l2_sensitivity(sensitivity, m, grid)
    worst = 0.0
    for _ in range(2000):
        x = rng.uniform(-1, 1, m)
        step = rng.normal(size=m)
        x2 = x + sensitivity * step / np.linalg.norm(step)
        worst = max(worst, float(np.linalg.norm(grid.to_units(x) - grid.to_units(x2))))
    # the adversarial pair: every coordinate just below a rounding boundary on one side, above on the other
    half = grid.granularity / 2
    x = np.full(m, half - 1e-9)
    x2 = x + np.full(m, sensitivity / math.sqrt(m)) + 2e-9
    worst = max(worst, float(np.linalg.norm(grid.to_units(x) - grid.to_units(x2))))
    assert worst <= bound
    assert worst > sensitivity / grid.granularity  # rounding does add to the shift


def test_node_sharing_inequality_of_the_tree_charge():
    """Σ_j (c_j a + b)² <= P (√P a + b)² for c_j >= 1 summing to P (the per-participation tree charge)."""
    rng = np.random.default_rng(12)
    for _ in range(3000):
        participations = int(rng.integers(1, 30))
        cuts = np.sort(
            rng.choice(np.arange(1, participations), rng.integers(0, participations), replace=False)
        )
        counts = np.diff(np.concatenate([[0], cuts, [participations]]))
        a, b = rng.uniform(0, 50), rng.uniform(0, 10)
        assert (
            np.sum((counts * a + b) ** 2) <= participations * (math.sqrt(participations) * a + b) ** 2 + 1e-9
        )


def test_l2_certificate_needs_far_less_noise_than_the_entrywise_composition():
    m = statistic_size(5)
    l2 = secure_l2_gaussian(1.0, 1e-5, sensitivity=3 / math.sqrt(2), coordinates=m, bits="rng")
    entrywise = secure_gaussian(1.0, 1e-5, sensitivity=3 / math.sqrt(2), dimension=m, bits="rng")
    assert l2.real_sigma < entrywise.real_sigma / 3  # √20 ≈ 4.5 before the conversions' differences
    release = l2(np.linspace(-1, 1, m), np.random.default_rng(1))
    assert np.all(release / l2.grid.granularity == np.round(release / l2.grid.granularity))


# ----------------------------------------------------------------------------- the aggregators
def _batches(runs: int, size: int, rounds: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, (runs, 1, size)) for _ in range(rounds)]


@pytest.mark.parametrize("tree", [False, True])
def test_releases_are_exact_grid_multiples_with_the_stated_noise(tree):
    """Prefix error variance: n σ² (local) or popcount(n) σ² (tree nodes).

    4000 runs × 5 entries per round; a ratio outside 1 ± 0.09 is 6.4 standard errors
    (√(2/20000) = 0.01): false-positive rate below 1e-9 per check, 8 checks.
    """
    runs, size, grid, sigma = 4000, 5, Grid(-4), 32
    privatizer = SecureTreeGaussian(grid, sigma, 8, 2) if tree else SecureLocalGaussian(grid, sigma, 2)
    aggregator = privatizer.start(runs, size)
    rng = np.random.default_rng(5)
    exact = np.zeros((runs, size))
    for n, batch in enumerate(_batches(runs, size, 8, 6), start=1):
        released = aggregator.add_batch(batch, n, rng)
        assert np.array_equal(released / grid.granularity, np.round(released / grid.granularity))
        exact += batch.sum(axis=1)
        error = released - exact
        nodes = bin(n).count("1") if tree else n
        variance = float(np.mean(error**2))
        assert variance / (nodes * privatizer.real_sigma**2) == pytest.approx(1.0, abs=0.09)
        rounding = privatizer.rounding_error(8, 1)
        assert abs(float(np.mean(error))) <= rounding + 6 * privatizer.real_sigma * math.sqrt(
            nodes / error.size
        )


def test_tree_rounds_each_user_on_the_fine_grid_then_each_node():
    grid = Grid(-2)
    privatizer = SecureTreeGaussian(grid, 1, 4, 2)
    aggregator = privatizer.start(1, 3)
    aggregator.pool = exact_samplers.IntegerPool(1, np.random.default_rng(0))
    aggregator.pool.buffer, aggregator.pool.position = np.zeros(100, dtype=np.int64), 0  # no noise
    step = math.ldexp(1.0, -2 - FINE_BITS)
    values = [np.array([[[0.124, 0.3, -0.7]]]), np.array([[[0.001, 0.2, 0.05]]])]
    first = aggregator.add_batch(values[0], 1, aggregator.pool.rng)
    second = aggregator.add_batch(values[1], 2, aggregator.pool.rng)
    assert np.array_equal(first, grid.from_units(grid.to_units(values[0][0, 0]))[None])
    node = np.round(values[0] / step) + np.round(values[1] / step)  # users on the fine grid, exactly
    assert np.array_equal(second[0], grid.from_units(np.rint(node[0, 0] * step / grid.granularity)))


# ----------------------------------------------------------------------------- runs
@pytest.mark.parametrize(
    "algorithm, privacy",
    [("linucb-jdp", "central"), ("linucb-ldp", "local"), ("linucb-sdp-amp", "shuffle")],
)
def test_cli_secure_run_meets_the_target(capsys, algorithm, privacy):
    argv = ["bandit", "run", algorithm, "--privacy", privacy, "--epsilon", "1", "--delta", "1e-5", "--secure",
            "--horizon", "2000", "--json"]  # fmt: skip
    assert main(argv) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["target_met"] is True and payload["secure"] is True
    certificate = payload["certificate"]
    assert certificate["mechanism"] == "discrete-gaussian-l2"
    assert certificate["parameters"]["sampler"] == "integer-exact"
    assert payload["max_user_epsilon"] <= 1.0
    assert certificate["trust_model"] == privacy


def test_cli_refuses_secure_for_the_bit_sum_protocol(capsys):
    argv = ["bandit", "run", "linucb-sdp-vec", "--privacy", "shuffle", "--epsilon", "1", "--delta", "1e-5",
            "--secure", "--horizon", "100"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "secure" in err and "already bits" in err


def test_secure_theory_radius_is_refused():
    config = RunConfig(
        "linucb-ldp", "local", 1.0, 1e-5, horizon=50, options={"secure": True, "radius": "theory"}
    )
    with pytest.raises(InvalidParameter, match="radius"):
        run_linucb_config(config)


@pytest.mark.parametrize("algorithm", ["linucb-ldp", "linucb-jdp", "linucb-sdp-amp"])
@pytest.mark.parametrize("participations", [1, 4])
def test_secure_epsilon_is_never_below_the_float_epsilon_at_the_same_sigma(algorithm, participations):
    common = {"epsilon": 1.0, "delta": 1e-5, "horizon": 400, "batch_size": 1, "dimension": 5,
              "participations": participations}  # fmt: skip
    secure = calibrate_secure(algorithm, **common)
    assert secure.claim_met and secure.certificate.parameters["sampler"] == "integer-exact"
    floating = calibrate(algorithm, sigma=secure.privatizer.real_sigma, **common)
    for delta in (1e-5, 1e-8):
        assert secure.certificate.epsilon_for(delta) >= floating.certificate.epsilon_for(delta)
    # the secure σ is close to the float calibration's (zCDP conversion and rounding only)
    tight = calibrate(algorithm, **common)
    assert tight.noise["sigma"] <= secure.privatizer.real_sigma <= 1.15 * tight.noise["sigma"]


@pytest.mark.parametrize("engine", ["numpy", "numba"])
def test_a_refused_charge_draws_nothing(monkeypatch, engine):
    if engine == "numba" and not linucb.linucb_kernel.AVAILABLE:
        pytest.skip("numba not installed")
    env = vaswani_instance(2, 3, 5, np.random.default_rng(3))
    grid = Grid(-6)
    privatizers = [SecureLocalGaussian(grid, 64, 3), SecureTreeGaussian(grid, 64, 30, 3)]
    releases = []
    drawn = []
    for cls in (linucb_secure._SecureLocalSum, linucb_secure._SecureTreeSum):
        original = cls.add_batch

        def recording(self, statistics, rounds_done, rng, original=original):
            releases.append(rounds_done)
            return original(self, statistics, rounds_done, rng)

        monkeypatch.setattr(cls, "add_batch", recording)
    sampler = exact_samplers.sample_discrete_gaussian
    monkeypatch.setattr(
        exact_samplers, "sample_discrete_gaussian", lambda *a: drawn.append(a[1]) or sampler(*a)
    )

    def charge(batch, users):
        if batch == 7:
            raise BudgetExceeded("refused (test)")

    with pytest.raises(BudgetExceeded):
        run_batched_linucb(env, privatizers, horizon=30, batch_size=1, rng=np.random.default_rng(4),
                           before_release=charge, engine=engine)  # fmt: skip
    assert sorted(set(releases)) == list(range(1, 8))  # batches 0..6 released, none from batch 7 on
    assert len(drawn) == 2  # one block per privatizer, drawn at its first (charged) release


@pytest.mark.slow
def test_secure_regret_matches_the_float_run_at_the_same_sigma():
    """Final regret of 10 seeded runs each: secure against float at the secure run's σ.

    The difference of means is compared with 4 standard errors of the difference: under equal
    means a false-positive rate of about 6e-5 (normal approximation).
    """
    common = {"horizon": 2000, "runs": 10, "seed": 21}
    secure = run_linucb_config(
        RunConfig("linucb-jdp", "central", 1.0, 1e-5, options={"secure": True}, **common)
    )
    sigma = secure.extras["noise"]["sigma"]
    floating = run_linucb_config(
        RunConfig("linucb-jdp", "central", 1.0, 1e-5, options={"sigma": sigma}, **common)
    )
    a, b = secure.cumulative_regret[:, -1], floating.cumulative_regret[:, -1]
    stderr = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    assert abs(a.mean() - b.mean()) <= 4 * stderr
    assert secure.target_met and floating.certificate.epsilon <= secure.certificate.epsilon


def test_float_privatizers_are_unchanged_by_the_secure_module():
    """The float aggregators stay the compiled engine's fast kinds; the secure ones run their add_batch."""
    assert type(LocalGaussianRandomizer(1.0).start(1, 5)) is linucb_privatizers.LocalGaussianSum
    assert type(TreeGaussian(1.0, 10).start(1, 5)) is linucb_privatizers.TreeSum


def test_best_composition_adds_rho_for_zcdp_certificates():
    from dpcert.accounting.composition import compose_counts
    from dpcert.mechanisms.zcdp import zcdp_certificate

    single = discrete_gaussian_l2_certificate(
        900.0, l2_sensitivity=300.0, coordinates=20, granularity=2.0**-9, delta=1e-6
    )
    composed = compose_counts([(single, 7)], delta=1e-5)
    direct = discrete_gaussian_l2_certificate(
        900.0, l2_sensitivity=300.0, coordinates=20, compositions=7, granularity=2.0**-9, delta=1e-5
    )
    assert composed.mechanism == "discrete-gaussian-l2" and composed.parameters["compositions"] == 7
    assert composed.epsilon == pytest.approx(direct.epsilon, rel=1e-9)
    mixed = compose_counts([(single, 2), (zcdp_certificate(0.01, delta=1e-6), 3)], delta=1e-5)
    rho = 2 * 300.0**2 / (2 * 900.0**2) + 3 * 0.01
    assert mixed.epsilon <= zcdp_certificate(rho * (1 + 1e-9), delta=1e-5).epsilon
    assert mixed.epsilon >= zcdp_certificate(rho, delta=1e-5).epsilon * (1 - 1e-9)
    # with a non-zCDP component the sum does not apply and the other methods decide
    with_gaussian = compose_counts([(single, 2), (gaussian_certificate(5.0, delta=1e-6), 1)], delta=1e-5)
    assert "zcdp" not in with_gaussian.notes[-1]


def test_returning_users_secure_run_meets_the_target_by_adding_rho():
    for algorithm, privacy in (("linucb-jdp", "central"), ("linucb-ldp", "local")):
        config = RunConfig(
            algorithm, privacy, 1.0, 1e-5, horizon=300, options={"secure": True, "participations": 3}
        )
        run = run_linucb_config(config)
        assert run.target_met and run.certificate.mechanism == "discrete-gaussian-l2"


def test_compiled_and_numpy_engines_agree_on_secure_runs():
    if not linucb.linucb_kernel.AVAILABLE:
        pytest.skip("numba not installed")
    grid = Grid(-6)
    results = []
    for engine in ("numpy", "numba"):
        env = vaswani_instance(3, 4, 8, np.random.default_rng(13))
        privatizers = [SecureLocalGaussian(grid, 300, 4), SecureTreeGaussian(grid, 300, 60, 4, batch_size=2)]
        result = run_batched_linucb(env, privatizers, horizon=60, batch_size=2, rng=np.random.default_rng(14),
                                    engine=engine)  # fmt: skip
        results.append(result)
    assert np.array_equal(results[0].actions, results[1].actions)
    assert np.allclose(results[0].cumulative_regret, results[1].cumulative_regret, rtol=0, atol=1e-9)


@pytest.mark.parametrize("algorithm", ["linucb-ldp", "linucb-jdp", "linucb-sdp-amp"])
def test_paper_sigma_and_auto_batch_carry_over_to_the_secure_path(algorithm):
    common = {"epsilon": 1.0, "delta": 1e-5, "horizon": 4000, "batch_size": "auto", "dimension": 5}
    floating = calibrate(algorithm, calibration="paper", **common)
    secure = calibrate_secure(algorithm, calibration="paper", **common)
    grid = secure.privatizer.grid
    assert secure.noise["batch_size"] == floating.noise["batch_size"] == floating.batch_rule.batch_size
    assert (
        floating.noise["sigma"] <= secure.privatizer.real_sigma < floating.noise["sigma"] + grid.granularity
    )
    assert secure.certificate.epsilon_for(1e-5) >= floating.certificate.epsilon_for(1e-5)
    supplied = calibrate_secure(algorithm, sigma=50.0, **common)
    assert (
        supplied.privatizer.real_sigma == 50.0 and "user-supplied noise level" in supplied.certificate.notes
    )


# ----------------------------------------------------------------------------- secure P_Amp, amplified
def test_secure_pamp_uses_amplification_where_it_needs_less_noise():
    from dpcert.mechanisms.discrete_gaussian_l2 import DiscreteGaussianL2Profile
    from dpcert.theory import amplification

    common = {"epsilon": 0.2, "delta": 0.1, "horizon": 20000, "dimension": 5}
    amplified = calibrate_secure("linucb-sdp-amp", batch_size=1000, **common)
    local = calibrate_secure("linucb-ldp", batch_size=1, **common)  # the same randomizer, local only
    certificate = amplified.certificate
    assert certificate.mechanism == "pamp-secure" and amplified.claim_met
    assert amplified.privatizer.real_sigma < local.privatizer.real_sigma  # amplification pays at B = 1000
    parameters = certificate.parameters
    # independently: the randomizer is (eps0, delta0)-LDP by its l2 zCDP profile ...
    profile = DiscreteGaussianL2Profile(
        {key: parameters[key] for key in ("sigma", "l2_sensitivity", "coordinates")}
    )
    assert profile.delta_for(parameters["epsilon0"]) <= parameters["delta0"]
    assert parameters["sigma"] == amplified.privatizer.sigma
    assert parameters["l2_sensitivity"] >= JOINT_SENSITIVITY / parameters["granularity"] + math.sqrt(20)
    # ... and FMT 2020 Thm 3.2 + 3.8 over the 1000 shuffled users gives at most the claimed delta
    total = amplification.numeric_delta(0.2, parameters["epsilon0"], 1000) + amplification.approximate_term(
        0.2, parameters["epsilon0"], parameters["delta0"], 1000
    )
    assert total <= 0.1
    # the shuffled view is never more private than one user's messages would be without amplification
    assert certificate.epsilon_for(0.1) <= 0.2


def test_secure_pamp_certificate_rejects_a_forged_noise_level():
    amplified = calibrate_secure(
        "linucb-sdp-amp", epsilon=0.2, delta=0.1, horizon=20000, batch_size=1000, dimension=5
    )
    assert Certificate.from_json(amplified.certificate.to_json()) == amplified.certificate
    forged = amplified.certificate.to_dict()
    forged["parameters"]["sigma"] = forged["parameters"]["sigma"] / 2  # less noise than the local claim needs
    with pytest.raises(CertificateMismatch):
        Certificate.from_dict(forged)
    shifted = amplified.certificate.to_dict()
    shifted["parameters"]["l2_sensitivity"] = 2 * shifted["parameters"]["l2_sensitivity"]
    with pytest.raises(CertificateMismatch):
        Certificate.from_dict(shifted)


def test_secure_pamp_falls_back_to_the_local_guarantee_for_a_lone_last_user():
    # T = 20,001 with B = 1000: the last batch holds one user, who gets no amplification
    lone = calibrate_secure(
        "linucb-sdp-amp", epsilon=0.2, delta=0.1, horizon=20001, batch_size=1000, dimension=5
    )
    assert lone.certificate.mechanism == "discrete-gaussian-l2" and lone.claim_met


def test_cli_secure_pamp_with_large_batches_meets_the_target(capsys):
    argv = ["bandit", "run", "linucb-sdp-amp", "--privacy", "shuffle", "--epsilon", "0.2", "--delta", "0.1",
            "--secure", "--horizon", "4000", "--option", "batch_size=1000", "--json"]  # fmt: skip
    assert main(argv) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["target_met"] is True
    assert payload["certificate"]["mechanism"] == "pamp-secure"
    assert payload["certificate"]["parameters"]["sampler"] == "integer-exact"
