"""One privacy path for every bandit run: one shared ledger, per-user totals, charges before releases.

Every algorithm of ``dpcert bandit list`` under every privacy model it supports runs at (ε, δ) = (1, 1e-5)
with ``--ledger`` on ONE ledger; then each user's charges are read back from the ledger export and composed
independently of the library's composition (Gaussian: μ² adds, closed-form profile; Laplace: losses add),
and ``dpcert ledger show`` must read the mixed ledger.
"""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
from reward_recording import RewardRecordingBandit
from scipy.stats import norm

from dpcert.accounting.composition import compose_counts
from dpcert.bandits import registry
from dpcert.certificates import Certificate
from dpcert.cli import main
from dpcert.ledger.api import Ledger
from dpcert.testing import assert_release_stops_at_refusal

EPSILON, DELTA = 1.0, 1e-5
LINEAR = {"dimension": 3, "arms": 8}
CONTEXTUAL = {"dimension": 2, "arms": 5}
# (algorithm, privacy, horizon, options): every private (algorithm, model) pair of `dpcert bandit list`,
# plus returning users where a family supports them
CASES = [
    ("dp-dpe", "central", 2000, LINEAR),
    ("dp-dpe", "local", 2000, LINEAR),
    ("dp-dpe", "shuffle", 2000, LINEAR),
    ("dp-dpe", "central", 2000, {**LINEAR, "user_mode": "returning", "population": 400}),
    ("dp-pe", "central", 1000, LINEAR),
    ("dp-pe", "local", 1000, LINEAR),
    ("dp-pe", "shuffle", 1000, LINEAR),
    ("mab-se", "central", 400, {}),
    ("mab-se", "local", 400, {}),
    ("mab-se", "shuffle", 400, {}),
    ("sdp-ae", "shuffle", 400, {}),
    ("vb-sdp-ae", "shuffle", 400, {}),
    ("dp-se", "central", 2000, {"means": [0.9, 0.2]}),
    ("dp-ucb", "central", 400, {}),
    ("ldp-ucb", "local", 400, {}),
    ("ldp-se", "local", 400, {"mechanism": "laplace"}),
    ("robust-elimination", "local", 400, {"arms": 6, "dimension": 2}),
    ("robust-elimination", "local", 400, {"arms": 6, "dimension": 2, "model": "M2"}),
    ("linucb-ldp", "local", 60, CONTEXTUAL),
    ("linucb-ldp", "local", 60, {**CONTEXTUAL, "participations": 3}),
    ("linucb-jdp", "central", 60, CONTEXTUAL),
    ("linucb-jdp", "central", 60, {**CONTEXTUAL, "participations": 2}),
    ("linucb-sdp-amp", "shuffle", 60, CONTEXTUAL),
    ("linucb-sdp-vec", "shuffle", 60, CONTEXTUAL),
    ("ldp-linear", "local", 60, CONTEXTUAL),
    ("ldp-linear-combiner", "local", 60, CONTEXTUAL),
]


def _gaussian_delta(epsilon: float, mu: float) -> float:
    """Balle & Wang 2018 Thm 8, written out here (independent of dpcert.mechanisms)."""
    return norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * norm.cdf(-epsilon / mu - mu / 2)


def _user_delta_at_target(history: Counter, certificates: dict[str, dict]) -> float:
    """δ(ε = 1) of one user's composed charges, computed without dpcert's composition."""
    parts = [(certificates[digest], count) for digest, count in history.items()]
    mechanisms = {c["mechanism"] for c, _ in parts}
    if mechanisms == {"gaussian"}:
        mu_squared = 0.0
        for c, n in parts:
            q = c["parameters"]
            mu_squared += n * q["compositions"] * (q["sensitivity"] / q["sigma"]) ** 2
        return _gaussian_delta(EPSILON, math.sqrt(mu_squared))
    if mechanisms == {"laplace"}:  # pure DP: the losses add up (basic composition is exact at δ = 0)
        total = sum(n * c["parameters"]["sensitivity"] / c["parameters"]["scale"] for c, n in parts)
        return 0.0 if total <= EPSILON * (1 + 1e-12) else 1.0
    if sum(n for _, n in parts) == 1:  # one participation: its own profile
        return Certificate.from_dict(parts[0][0]).delta_for(EPSILON)
    certificate = compose_counts([(Certificate.from_dict(c), n) for c, n in parts], delta=DELTA)
    return certificate.delta_for(EPSILON)


def test_every_algorithm_and_model_leaves_one_readable_ledger_within_the_target(tmp_path, capsys):
    listed = {
        (name, privacy)
        for name, spec in registry.algorithms().items()
        for privacy in spec.privacy_models
        if privacy != "none"
    }
    assert listed == {(a, p) for a, p, _, _ in CASES}  # every private pair of `dpcert bandit list`
    path = tmp_path / "shared.db"
    for algorithm, privacy, horizon, options in CASES:
        config = registry.RunConfig(
            algorithm, privacy, EPSILON, DELTA, horizon=horizon, runs=2, seed=1, ledger_path=path,
            options=options,
        )  # fmt: skip
        run = registry.algorithm(algorithm).run(config)
        assert run.target_met, (algorithm, privacy, options, run.max_user_epsilon)
        assert run.certificate is not None and run.certificate.delta_for(EPSILON) <= DELTA * (1 + 1e-9)
        assert run.certificate.neighbouring.value != "user-level"
    with Ledger(path) as ledger:
        exported = json.loads(ledger.export("json"))
    histories: dict[str, Counter] = {}
    for charge in exported["charges"]:
        histories.setdefault(charge["user_id"], Counter())[charge["certificate"]] += 1
    prefixes = {user.split("/")[0] for user in histories}
    assert prefixes == {a for a, _, _, _ in CASES}  # every run charged, ids namespaced by run
    assert max(sum(h.values()) for h in histories.values()) >= 3  # returning users were exercised
    for digest, certificate in exported["certificates"].items():
        assert certificate["neighbouring"] in ("replace-one", "add/remove"), digest
    distinct = {tuple(sorted(h.items())) for h in histories.values()}
    for history in distinct:
        delta = _user_delta_at_target(Counter(dict(history)), exported["certificates"])
        assert delta <= DELTA * (1 + 1e-9), history
    assert main(["ledger", "show", str(path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["users"] == len(histories)


# ----------------------------------------------------------------------------- refused charges
def _refused(call, rng: np.random.Generator) -> tuple[str, str]:
    """Run ``call(session)`` with a refusing ledger; the generator's states at refusal and after."""
    return assert_release_stops_at_refusal(call, rng)


def test_a_refused_charge_stops_the_release_in_every_family():
    from functools import partial

    from dpcert.bandits.algorithms.elimination import EliminationSettings, run_elimination
    from dpcert.bandits.algorithms.ldp_linear import ONLINE_UCB, run_ldp_linear
    from dpcert.bandits.algorithms.linucb import run_group
    from dpcert.bandits.algorithms.mab import central_dp_se
    from dpcert.bandits.algorithms.robust_elimination import LaplaceClients, LinearArms, robust_elimination
    from dpcert.bandits.calibration.ldp_linear import calibrate_randomizer
    from dpcert.bandits.calibration.linucb import calibrate
    from dpcert.bandits.environments.contextual import vaswani_instance
    from dpcert.bandits.environments.linear import sample_instances
    from dpcert.bandits.privatizers import Contributions, make_privatizer

    def session_kw(call):  # call(**kw, session=s)
        return lambda s: call(session=s)

    # DP-DPE / DP-PE privatizers: the charge precedes every draw of the release (state untouched)
    bandit = sample_instances(3, 8, 1, np.random.default_rng(0))[0]
    ids, values, groups = np.arange(50), np.zeros((50, 2)), np.arange(50) % 3
    for model in ("central", "local", "shuffle"):
        privatizer = make_privatizer(model, reward_bound=bandit.reward_bound, epsilon=EPSILON, delta=DELTA)
        rng = np.random.default_rng(1)
        initial = json.dumps(rng.bit_generator.state)
        for contributions in (
            Contributions.mean_of_rows(values, ids),
            Contributions.of_rows(values[:, 0], groups, 3, ids),
        ):
            release = partial(privatizer.release, contributions, rng)
            assert _refused(session_kw(release), rng) == (initial, initial)
        # a whole run stops at its first release (nothing drawn after the refusal)
        rng = np.random.default_rng(2)
        at, after = _refused(
            session_kw(partial(run_elimination, bandit, privatizer, EliminationSettings(500), rng)), rng
        )
        assert at == after
    # MAB eliminations: the first batch's release is charged right after its rewards are drawn, before
    # its noise
    rng = np.random.default_rng(3)
    mab = RewardRecordingBandit(np.array([0.9, 0.5]))
    at, after = _refused(session_kw(partial(central_dp_se, mab, 400, rng, epsilon=EPSILON)), rng)
    assert at == after == mab.states[0]
    # robust elimination (M1 and M2): no report noise after the refusal
    arms = LinearArms.random_sphere(6, 2, np.random.default_rng(4))
    for model in ("M1", "M2"):
        rng = np.random.default_rng(5)
        clients = LaplaceClients(model, epsilon=EPSILON)
        at, after = _refused(session_kw(partial(robust_elimination, arms, 400, rng, clients=clients)), rng)
        assert at == after
    # LinUCB family: the first batch's charge precedes its privatizer (no noise drawn after)
    for algorithm in ("linucb-ldp", "linucb-jdp", "linucb-sdp-amp", "linucb-sdp-vec"):
        c = calibrate(algorithm, epsilon=EPSILON, delta=DELTA, horizon=40, batch_size=20, dimension=2)
        env = vaswani_instance(2, 2, 5, np.random.default_rng(6))
        rng = np.random.default_rng(7)
        group = partial(run_group, env, [c], horizon=40, batch_size=20, rng=rng)
        at, after = _refused(lambda s, f=group: f(sessions=[s]), rng)
        assert at == after
    # seed-004 learners: round 1's user is charged before her noise is drawn
    local = calibrate_randomizer(EPSILON, DELTA)
    env = vaswani_instance(2, 2, 5, np.random.default_rng(8))
    rng = np.random.default_rng(9)
    learner = partial(
        run_ldp_linear, env, [ONLINE_UCB], horizon=20, sigma=local.sigma, epsilon=EPSILON, delta=DELTA,
        rng=rng,
        certificate=local.certificate,
    )  # fmt: skip
    at, after = _refused(session_kw(learner), rng)
    assert at == after
