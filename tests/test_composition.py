"""Composition: every method against an independent closed form, brute force or second method."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from dpcert import DPCertError, Guarantee
from dpcert.accounting.composition import compose, compose_counts, kov_delta
from dpcert.certificates import Certificate, approximate_dp_certificate
from dpcert.errors import CertificateMismatch, InvalidParameter
from dpcert.mechanisms.gaussian import GaussianProfile, gaussian_certificate
from dpcert.mechanisms.laplace import laplace_certificate
from dpcert.profiles import register_profile, registration_for


# --------------------------------------------------------------------------- independent references
def gaussian_epsilon_reference(mu: float, delta: float) -> float:
    """ε of a Gaussian mechanism with privacy parameter μ at δ (Balle & Wang 2018, Thm 8), by brentq
    on the closed form written with scipy.stats.norm (independent of dpcert's log-space code)."""

    def excess(epsilon: float) -> float:
        return (
            stats.norm.cdf(mu / 2 - epsilon / mu) - math.exp(epsilon) * stats.norm.cdf(-mu / 2 - epsilon / mu)
        ) - delta

    return optimize.brentq(excess, 0.0, 100.0, xtol=1e-14, rtol=1e-14)


def canonical_pair(epsilon: float, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """The canonical (ε, δ) pair of Kairouz, Oh & Viswanath 2015, Thm 2.1 (four outcomes)."""
    middle = (1 - delta) / (1 + math.exp(epsilon))
    p = np.array([delta, middle * math.exp(epsilon), middle, 0.0])
    q = np.array([0.0, middle, middle * math.exp(epsilon), delta])
    return p, q


def brute_force_composition_delta(epsilon_target: float, epsilon: float, delta: float, k: int) -> float:
    """Hockey-stick divergence of the k-fold product of canonical pairs, by enumerating 4^k outcomes."""
    p, q = canonical_pair(epsilon, delta)
    total = 0.0
    for outcome in itertools.product(range(4), repeat=k):
        pk = math.prod(p[i] for i in outcome)
        qk = math.prod(q[i] for i in outcome)
        total += max(0.0, pk - math.exp(epsilon_target) * qk)
    return total


# --------------------------------------------------------------------------- Gaussian (exact)
@pytest.mark.parametrize("sigma, k, delta", [(10.0, 100, 1e-5), (3.0, 7, 1e-6), (50.0, 1000, 1e-8)])
def test_k_gaussians_compose_to_one_gaussian_with_sigma_over_sqrt_k(sigma, k, delta):
    composed = compose([gaussian_certificate(sigma, delta=delta)] * k, delta=delta)
    single = gaussian_certificate(sigma / math.sqrt(k), delta=delta)
    assert composed.mechanism == "gaussian"
    assert composed.epsilon == pytest.approx(single.epsilon, rel=1e-9)
    assert composed.epsilon == pytest.approx(
        gaussian_epsilon_reference(math.sqrt(k) / sigma, delta), rel=1e-7
    )


def test_done_criterion_100_gaussians_within_one_percent_and_never_below():
    exact = gaussian_epsilon_reference(1.0, 1e-5)  # μ = sqrt(100) * 1 / 10 = 1
    certificate = gaussian_certificate(10.0, delta=1e-5, sensitivity=1.0)
    for method in ("best", "pld", "rdp"):
        composed = compose([certificate] * 100, method=method, delta=1e-5)
        assert composed.epsilon >= exact * (1 - 1e-12), method
        if method != "rdp":  # RDP is a valid but looser conversion
            assert composed.epsilon <= exact * 1.01, method
        Certificate.from_json(composed.to_json())  # re-verifies


def test_heterogeneous_gaussians_are_exact_and_agree_with_dp_accounting_pld():
    from dp_accounting import dp_event
    from dp_accounting.pld import pld_privacy_accountant

    sigmas = [2.0, 3.5, 5.0, 8.0]
    sensitivities = [1.0, 2.0, 0.5, 1.0]
    certificates = [
        gaussian_certificate(s, delta=1e-6, sensitivity=d) for s, d in zip(sigmas, sensitivities, strict=True)
    ]
    composed = compose(certificates * 3, delta=1e-6)
    mu = math.sqrt(3 * sum((d / s) ** 2 for s, d in zip(sigmas, sensitivities, strict=True)))
    assert composed.epsilon == pytest.approx(gaussian_epsilon_reference(mu, 1e-6), rel=1e-7)
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(
        dp_event.SelfComposedDpEvent(
            dp_event.ComposedDpEvent(
                [dp_event.GaussianDpEvent(s / d) for s, d in zip(sigmas, sensitivities, strict=True)]
            ),
            3,
        )
    )
    second = accountant.get_epsilon(1e-6)
    assert composed.epsilon <= second * (1 + 1e-9)  # exact never above the pessimistic PLD
    assert composed.epsilon == pytest.approx(second, rel=5e-3)


# --------------------------------------------------------------------------- KOV (optimal)
@pytest.mark.parametrize("k", [1, 2, 3, 5])
@pytest.mark.parametrize("epsilon0, delta0", [(0.3, 0.0), (1.0, 1e-3), (0.05, 0.01)])
def test_kov_matches_brute_force_enumeration(k, epsilon0, delta0):
    for epsilon_target in np.linspace(0.0, k * epsilon0 * 1.1, 9):
        brute = brute_force_composition_delta(float(epsilon_target), epsilon0, delta0, k)
        value = kov_delta(float(epsilon_target), epsilon0, delta0, k)
        assert value == pytest.approx(brute, rel=1e-8, abs=1e-15)
        assert value >= brute * (1 - 1e-12)  # never optimistic


def test_kov_corner_points_equal_theorem_3_3_with_exact_binomials():
    epsilon0, delta0, k = 0.2, 1e-4, 30
    for i in range(0, k // 2 + 1):
        delta_i = (
            sum(
                math.comb(k, ell) * (math.exp((k - ell) * epsilon0) - math.exp((k - 2 * i + ell) * epsilon0))
                for ell in range(i)
            )
            / (1 + math.exp(epsilon0)) ** k
        )
        theorem = 1 - (1 - delta0) ** k * (1 - delta_i)
        assert kov_delta((k - 2 * i) * epsilon0, epsilon0, delta0, k) == pytest.approx(
            theorem, rel=1e-8, abs=1e-16
        )


def test_optimal_for_1000_components_agrees_with_pld_of_the_canonical_pair():
    component = approximate_dp_certificate(0.01, 1e-9)
    optimal = compose_counts([(component, 1000)], method="optimal", delta=1e-5)
    pld = compose_counts([(component, 1000)], method="pld", delta=1e-5)
    assert optimal.epsilon <= pld.epsilon  # exact below the pessimistic estimate (with its FFT allowance)
    assert optimal.epsilon == pytest.approx(pld.epsilon, rel=2e-2)
    # Optimal is below advanced composition, which is far below basic composition (10).
    advanced = compose_counts([(component, 1000)], method="advanced", delta=1e-5)
    assert optimal.epsilon < advanced.epsilon < 10.0


@given(
    st.floats(1e-3, 2.0),
    st.sampled_from([0.0, 1e-10, 1e-7]),
    st.integers(1, 300),
    st.floats(1e-6, 1e-2),
)
@settings(max_examples=40, deadline=None)
def test_optimal_is_never_above_basic_or_advanced_and_always_valid(epsilon0, delta0, k, delta):
    component = approximate_dp_certificate(epsilon0, delta0)
    assume(delta > 1 - (1 - delta0) ** k + 1e-12)
    optimal = compose_counts([(component, k)], method="optimal", delta=delta)
    assert optimal.delta_for(optimal.epsilon) <= delta
    assert optimal.epsilon <= k * epsilon0 * (1 + 1e-12)  # basic, at a smaller or equal delta
    if delta > k * delta0:
        advanced = compose_counts([(component, k)], method="advanced", delta=delta)
        assert optimal.epsilon <= advanced.epsilon * (1 + 1e-12)


def test_pld_of_discrete_laplace_matches_kov_of_randomized_response():
    # With sensitivity 1 the privacy loss of DLap(a) is +a or -a, with probabilities 1/(1 + e^-a) and
    # 1/(1 + e^a): exactly randomized response with epsilon a, whose k-fold composition KOV gives.
    from dpcert.mechanisms.discrete_laplace import discrete_laplace_certificate

    a, k = 0.1, 50
    pld = compose([discrete_laplace_certificate(a)] * k, method="pld", delta=1e-6)
    exact = compose_counts([(approximate_dp_certificate(a, 0.0), k)], method="optimal", delta=1e-6)
    assert exact.epsilon <= pld.epsilon
    assert pld.epsilon == pytest.approx(exact.epsilon, rel=1e-3)


# --------------------------------------------------------------------------- advanced, basic, best
@pytest.mark.parametrize("epsilon0, delta0, k, delta", [(0.1, 1e-7, 100, 1e-4), (0.01, 0.0, 500, 1e-6)])
def test_advanced_is_exactly_the_theorem_3_20_expression(epsilon0, delta0, k, delta):
    composed = compose([approximate_dp_certificate(epsilon0, delta0)] * k, method="advanced", delta=delta)
    slack = delta - k * delta0
    expected = math.sqrt(2 * k * math.log(1 / slack)) * epsilon0 + k * epsilon0 * (math.exp(epsilon0) - 1)
    assert composed.epsilon >= expected * (1 - 1e-14)
    assert composed.epsilon == pytest.approx(expected, rel=1e-10)
    assert composed.delta == delta


def test_basic_sums_pure_laplace_and_best_is_the_minimum_of_all_methods():
    laplaces = [laplace_certificate(4.0), laplace_certificate(10.0)]
    basic = compose(laplaces * 5, method="basic", delta=0.0)
    assert basic.epsilon == pytest.approx(5 * (0.25 + 0.1), rel=1e-14)
    assert basic.epsilon >= 5 * (0.25 + 0.1)

    mixed = laplaces * 20 + [approximate_dp_certificate(0.05, 1e-8)] * 30
    best = compose(mixed, delta=1e-5)
    each = {}
    for method in ("basic", "advanced", "optimal", "pld"):
        try:
            each[method] = compose(mixed, method=method, delta=1e-5).epsilon
        except DPCertError:
            pass
    assert best.epsilon == pytest.approx(min(each.values()), rel=1e-12)
    assert best.epsilon <= min(each.values())


@register_profile(
    "test-eventless-gaussian",
    parameters=registration_for("gaussian").parameters,
)
class EventlessGaussianProfile(GaussianProfile):
    """A Gaussian profile without a dp_accounting event: a stand-in for profile-only mechanisms."""

    def dp_event(self):
        return None


def test_best_moves_profile_only_components_along_their_profiles():
    sigma, k = 20.0, 50
    parameters = {"sigma": sigma, "sensitivity": 1.0, "compositions": 1}
    epsilon = EventlessGaussianProfile(parameters).epsilon_for(1e-6)
    component = Certificate(
        "test-eventless-gaussian", Guarantee(epsilon, 1e-6), parameters=parameters
    ).verify()
    with pytest.raises(InvalidParameter):  # k claimed deltas of 1e-6 exceed the target 1e-5
        compose([component] * k, method="optimal", delta=1e-5)
    composed = compose([component] * k, delta=1e-5)
    assert "re-pointed" in " ".join(composed.notes)
    assert composed.delta_for(composed.epsilon) <= 1e-5
    exact = gaussian_epsilon_reference(math.sqrt(k) / sigma, 1e-5)  # the true composition
    assert exact <= composed.epsilon < k * epsilon


def test_best_moves_components_along_their_profiles_when_claimed_deltas_are_too_large():
    # A block of 10 pure 0.1-DP mechanisms, claimed at delta = 1e-3 (its KOV profile, no dp event).
    block = compose([approximate_dp_certificate(0.1, 0.0)] * 10, method="optimal", delta=1e-3)
    assert block.to_dp_event() is None
    with pytest.raises(InvalidParameter):  # 20 claimed deltas of 1e-3 exceed the target 1e-4
        compose([block] * 20, method="optimal", delta=1e-4)
    composed = compose([block] * 20, delta=1e-4)
    Certificate.from_json(composed.to_json())
    # 200 pure 0.1-DP mechanisms: KOV of all 200 is the exact optimum, basic gives 20.  The nested
    # blocks reach it up to PLD discretisation, through the PLD of their components.
    exact = compose_counts([(approximate_dp_certificate(0.1, 0.0), 200)], method="optimal", delta=1e-4)
    assert exact.epsilon <= composed.epsilon
    assert composed.epsilon == pytest.approx(exact.epsilon, rel=1e-2)
    # The blocks' PLD is that of their 200 flattened components, which re-pointing the blocks along
    # their profiles cannot beat: those passes are skipped, and PLD gives the answer.
    compared = [n for n in composed.notes if n.startswith("best of")][0]
    assert "delta_i" not in compared and composed.parameters["method"] == "pld"


def test_composition_certificate_round_trip_and_compact_storage():
    component = approximate_dp_certificate(0.01, 1e-9)
    composed = compose([component] * 1000, delta=1e-5)
    assert composed.mechanism == "composition"
    assert len(composed.parameters["components"]) == 1
    assert composed.parameters["components"][0]["count"] == 1000
    text = composed.to_json()
    assert len(text) < 3000
    again = Certificate.from_json(text)
    assert again == composed
    data = composed.to_dict()
    data["guarantee"]["epsilon"] = composed.epsilon * 0.9
    with pytest.raises(CertificateMismatch):
        Certificate.from_dict(data)


def test_trust_model_of_a_composition_is_the_weakest():
    local = approximate_dp_certificate(0.5, 0.0, trust_model="local")
    central = approximate_dp_certificate(0.5, 0.0, trust_model="central")
    assert compose([local, local], method="basic").trust_model.value == "local"
    assert compose([local, central], method="basic").trust_model.value == "central"


def test_default_delta_is_the_sum_of_component_deltas():
    composed = compose([approximate_dp_certificate(0.2, 1e-6)] * 10)
    assert composed.delta == pytest.approx(1e-5, rel=1e-12)
    assert composed.epsilon <= 2.0  # at least as good as basic composition


@pytest.mark.parametrize(
    "certificates, kwargs",
    [
        ([], {"delta": 1e-5}),
        (["not a certificate"], {"delta": 1e-5}),
        ([approximate_dp_certificate(1.0, 0.0)], {"method": "magic"}),
        ([approximate_dp_certificate(1.0, 0.0)], {"delta": 1.0}),
        ([approximate_dp_certificate(1.0, 0.0)], {"delta": -1e-5}),
        ([gaussian_certificate(1.0, delta=1e-5)], {"delta": 0.0}),
        ([approximate_dp_certificate(1.0, 1e-3)] * 10, {"method": "advanced", "delta": 1e-3}),
        ([approximate_dp_certificate(1.0, 0.5)] * 3, {}),
        ([approximate_dp_certificate(1.0, 0.0)], {"method": "rdp", "delta": 1e-5}),
        (
            [
                approximate_dp_certificate(1.0, 0.0),
                approximate_dp_certificate(1.0, 0.0, neighbouring="add/remove"),
            ],
            {"method": "basic"},
        ),
    ],
)
def test_bad_inputs_raise_named_errors(certificates, kwargs):
    with pytest.raises(InvalidParameter):
        compose(certificates, **kwargs)


def test_guarantee_of_a_composition_is_valid_at_its_own_point():
    composed = compose(
        [laplace_certificate(2.0)] * 8 + [gaussian_certificate(4.0, delta=1e-7)] * 4, delta=1e-5
    )
    assert composed.delta_for(composed.epsilon) <= 1e-5
    assert Guarantee(composed.epsilon, composed.delta) == composed.guarantee


# --------------------------------------------------------------------------- command line
def test_cli_account_compose_matches_the_library(tmp_path, capsys):
    from dpcert.cli import main

    gaussian = gaussian_certificate(10.0, delta=1e-5)
    path = tmp_path / "g.json"
    path.write_text(gaussian.to_json())
    paths = [str(path)] * 100
    assert main(["account", "compose", "--certificate", *paths, "--delta", "1e-5", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["epsilon"] == compose([gaussian] * 100, delta=1e-5).epsilon
    assert payload["delta"] == 1e-5 and payload["mechanisms"] == 100
    assert Certificate.from_dict(payload["certificate"]).epsilon == payload["epsilon"]


@pytest.mark.parametrize(
    "argv",
    [
        ["--certificate", "{missing}", "--delta", "1e-5"],
        ["--certificate", "{bad}", "--delta", "1e-5"],
        ["--certificate", "{good}", "--delta", "1.5"],
    ],
)
def test_cli_account_compose_bad_input_exits_2(tmp_path, capsys, argv):
    from dpcert.cli import main

    (tmp_path / "good.json").write_text(laplace_certificate(1.0).to_json())
    (tmp_path / "bad.json").write_text("{not json")
    files = {name: str(tmp_path / f"{name}.json") for name in ("missing", "bad", "good")}
    assert main(["account", "compose", *[a.format(**files) for a in argv]]) == 2
    assert "dpcert: error" in capsys.readouterr().err


def test_cli_account_compose_unknown_method_exits_2(tmp_path):
    from dpcert.cli import main

    (tmp_path / "good.json").write_text(laplace_certificate(1.0).to_json())
    argv = [
        "account",
        "compose",
        "--certificate",
        str(tmp_path / "good.json"),
        "--delta",
        "0",
        "--method",
        "x",
    ]
    assert main(argv) == 2  # a usage error: main returns the exit status


def test_composition_certificates_read_back_in_a_fresh_process(tmp_path):
    import subprocess
    import sys

    composed = compose([laplace_certificate(2.0), approximate_dp_certificate(0.1, 1e-7)], "optimal", 1e-5)
    path = tmp_path / "composed.json"
    path.write_text(composed.to_json())
    script = (
        "import sys; from dpcert import Certificate; "
        "print(Certificate.from_json(open(sys.argv[1]).read()).epsilon)"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True
    )
    assert float(result.stdout) == composed.epsilon
