"""The bandits' calibration enum: PAPER or LEAST_NOISE; former spellings deprecated for one release."""

import math
import warnings

import pytest

from dpcert.accounting.returning_users import split_budget
from dpcert.bandits.algorithms.elimination import EliminationSettings
from dpcert.bandits.calibration.elimination import max_released_phases, release_budget
from dpcert.bandits.calibration.ldp_linear import calibrate_randomizer
from dpcert.bandits.calibration.linucb import calibrate
from dpcert.bandits.privatizers import (
    LEAST_NOISE_SPELLINGS,
    Calibration,
    CentralGaussian,
    LocalGaussian,
    calibration_from_label,
    calibration_label,
    calibration_of,
    make_privatizer,
    trust_model_of,
)
from dpcert.bandits.registry import RunConfig
from dpcert.certificates import Guarantee, TrustModel
from dpcert.errors import InvalidParameter


def _quietly(value):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        return calibration_of(value)


def test_members_and_their_values_are_accepted_without_warning():
    assert _quietly(Calibration.PAPER) is Calibration.PAPER
    assert _quietly("paper") is Calibration.PAPER
    assert _quietly("least-noise") is Calibration.LEAST_NOISE
    assert _quietly(Calibration.LEAST_NOISE) is Calibration.LEAST_NOISE


@pytest.mark.parametrize("spelling", LEAST_NOISE_SPELLINGS)
def test_former_spellings_of_least_noise_warn_and_mean_least_noise(spelling):
    with pytest.warns(DeprecationWarning, match=f"calibration='{spelling}' is deprecated"):
        assert calibration_of(spelling) is Calibration.LEAST_NOISE


@pytest.mark.parametrize("value", ["fast", "", None, 1.0, "PAPER"])
def test_anything_else_is_refused_naming_the_parameter(value):
    with pytest.raises(InvalidParameter) as raised:
        calibration_of(value)
    assert raised.value.name == "calibration"


def test_ldp_randomizer_gives_the_same_noise_and_certificate_for_the_enum_and_the_old_name():
    with pytest.warns(DeprecationWarning):
        old = calibrate_randomizer(1.0, 1e-5, "analytic_joint")
    new = calibrate_randomizer(1.0, 1e-5, Calibration.LEAST_NOISE)
    default = calibrate_randomizer(1.0, 1e-5)
    assert old.sigma == new.sigma == default.sigma
    assert old.certificate.to_dict() == new.certificate.to_dict() == default.certificate.to_dict()
    assert old.calibration == new.calibration == "analytic_joint"  # reports keep the name they had
    assert new.claim_met


def test_ldp_randomizer_paper_noise_is_algorithm_1s_formula():
    epsilon, delta = 0.5, 1e-5
    paper = calibrate_randomizer(epsilon, delta, Calibration.PAPER)
    assert paper.sigma == pytest.approx(2.0 * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon, rel=1e-15)
    assert paper.calibration == "paper"
    assert calibrate_randomizer(epsilon, delta, "paper").sigma == paper.sigma


def test_ldp_randomizer_refuses_an_unknown_calibration_even_with_a_user_sigma():
    with pytest.raises(InvalidParameter) as raised:
        calibrate_randomizer(1.0, 1e-5, "fast", sigma=2.0)
    assert raised.value.name == "calibration"


def test_dp_dpe_privatizers_take_the_enum_and_warn_at_the_caller_for_the_old_name():
    with pytest.warns(DeprecationWarning) as record:
        old = CentralGaussian(1.0, 1.0, 1e-5, "tight")
    assert record[0].filename == __file__  # attributed to the constructor's caller
    new = CentralGaussian(1.0, 1.0, 1e-5, Calibration.LEAST_NOISE)
    assert old.calibration is new.calibration is Calibration.LEAST_NOISE
    assert old.noise(2.0, "Thm") == new.noise(2.0, "Thm")
    with pytest.warns(DeprecationWarning) as record:
        make_privatizer("local", reward_bound=1.0, epsilon=1.0, delta=1e-5, calibration="tight")
    assert record[0].filename == __file__
    paper = LocalGaussian(1.0, 0.5, 1e-5, "paper")
    sigma, _ = paper.noise(2.0, "Thm")  # the classical Gaussian sigma of the paper at sensitivity 2
    assert sigma == pytest.approx(2.0 * math.sqrt(2.0 * math.log(1.25 / 1e-5)) / 0.5, rel=1e-15)
    with pytest.raises(InvalidParameter) as raised:
        make_privatizer("shuffle", reward_bound=1.0, epsilon=1.0, delta=1e-5, calibration="loose")
    assert raised.value.name == "calibration"


def test_returning_user_split_follows_the_calibration():
    settings = EliminationSettings(horizon=1000, user_mode="returning")
    target = Guarantee(1.0, 1e-5)
    split = split_budget(target, max_released_phases(1000))
    paper = release_budget(target, settings, Calibration.PAPER)
    least = release_budget(target, settings, Calibration.LEAST_NOISE)
    assert (paper.epsilon, paper.delta) == (split.paper.epsilon, split.paper.delta)
    assert (least.epsilon, least.delta) == (split.tight.epsilon, split.tight.delta)
    assert release_budget(target, settings, "paper") == paper
    with pytest.warns(DeprecationWarning):
        assert release_budget(target, settings, "tight") == least


def test_linucb_calibration_takes_the_enum_and_reports_tight_as_before():
    common = {"epsilon": 1.0, "delta": 1e-5, "horizon": 50, "batch_size": 1, "dimension": 2}
    with pytest.warns(DeprecationWarning) as record:
        old = calibrate("linucb-ldp", calibration="tight", **common)
    assert len(record) == 1 and record[0].filename == __file__
    new = calibrate("linucb-ldp", calibration=Calibration.LEAST_NOISE, **common)
    assert old.calibration == new.calibration == "tight"  # the name results have always carried
    assert old.noise == new.noise and old.certificate.to_dict() == new.certificate.to_dict()
    paper = calibrate("linucb-ldp", calibration=Calibration.PAPER, **common)
    assert paper.calibration == "paper" and paper.noise["sigma"] > new.noise["sigma"]
    with pytest.raises(InvalidParameter) as raised:
        calibrate("linucb-ldp", calibration="loose", **common)
    assert raised.value.name == "calibration"


def test_run_config_converts_privacy_and_calibration_once_and_names_a_bad_field():
    from_strings = RunConfig("dp-dpe", "central", 1.0, 1e-5, calibration="paper")
    assert from_strings.privacy is TrustModel.CENTRAL and from_strings.calibration is Calibration.PAPER
    assert (from_strings.privacy_name, from_strings.calibration_name) == ("central", "paper")
    plain = RunConfig("dp-dpe", "none")
    assert plain.privacy is None and plain.privacy_name == "none"
    assert plain.calibration is Calibration.LEAST_NOISE and plain.calibration_name == "tight"
    for field, value in (("privacy", "centralised"), ("calibration", "fast")):
        with pytest.raises(InvalidParameter) as raised:
            RunConfig("dp-dpe", **{field: value})
        assert raised.value.name == field


def test_command_line_calibration_names_map_to_the_enum_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert calibration_from_label("tight") is Calibration.LEAST_NOISE
        assert calibration_from_label("paper") is Calibration.PAPER
    assert calibration_label(calibration_from_label("tight")) == "tight"
    assert trust_model_of("shuffle") is TrustModel.SHUFFLE and trust_model_of(None) is None
    with pytest.raises(InvalidParameter) as raised:
        calibration_from_label("least_noise", "--calibration")
    assert raised.value.name == "--calibration"
