"""Labels checked against the profile, duplicate keys refused, registered profiles not silently replaced.

Each refusal is paired with the evidence that it matters: the document a lenient reader would accept
(Python's ``json`` keeps the last copy of a duplicated key, so the forged first copy is what another
parser sees), or the closed-form Gaussian profile (Balle & Wang 2018, Thm 8) showing that a forged
claim is false.
"""

from __future__ import annotations

import importlib
import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from scipy import stats

from dpcert import _json
from dpcert.certificates import Certificate, Guarantee, approximate_dp_certificate
from dpcert.errors import CertificateFormatError, CertificateMismatch, InvalidParameter
from dpcert.mechanisms.discrete_gaussian import discrete_gaussian_certificate
from dpcert.mechanisms.discrete_laplace import discrete_laplace_certificate
from dpcert.mechanisms.gaussian import GaussianProfile, gaussian_certificate
from dpcert.mechanisms.laplace import laplace_certificate
from dpcert.profiles import ParameterSpec, register_profile, registration_for


def dumps_with_duplicate(value: Any, where: tuple[Any, ...], key: str, first: Any) -> str:
    """JSON of ``value`` with an extra ``key: first`` member written just before the real ``key`` member
    of the object at path ``where`` (Python's json would keep the real, last copy)."""

    def walk(item: Any, here: tuple[Any, ...]) -> str:
        if isinstance(item, dict):
            members = []
            for k, v in item.items():
                if here == where and k == key:
                    members.append(json.dumps(k) + ": " + json.dumps(first))
                members.append(json.dumps(k) + ": " + walk(v, here + (k,)))
            return "{" + ", ".join(members) + "}"
        if isinstance(item, list):
            return "[" + ", ".join(walk(v, here + (i,)) for i, v in enumerate(item)) + "]"
        return json.dumps(item, allow_nan=False)

    text = walk(value, ())
    assert text.count(json.dumps(key) + ":") == json.dumps(value).count(json.dumps(key) + ":") + 1
    return text


def gaussian_delta_closed_form(epsilon: float, sigma: float, sensitivity: float = 1.0) -> float:
    """Balle & Wang 2018, Thm 8: δ(ε) = Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ)."""
    a, b = sensitivity / (2.0 * sigma), epsilon * sigma / sensitivity
    return float(stats.norm.cdf(a - b) - math.exp(epsilon) * stats.norm.cdf(-a - b))


# --------------------------------------------------------------------------- the strict loader
def test_loader_reads_valid_json_exactly_as_json_does():
    documents = [
        gaussian_certificate(3.0, delta=1e-5).to_json(),
        '{"a": [1, 2.5, {"b": null, "c": true}], "d": "\\u00e9", "e": -0.0, "f": 1e308}',
        "[]",
        "0.1",
    ]
    for text in documents:
        assert _json.loads(text) == json.loads(text)
        assert json.dumps(_json.loads(text)) == json.dumps(json.loads(text))  # same floats, same order


@pytest.mark.parametrize(
    ("text", "key", "path"),
    [
        ('{"a": 1, "a": 2}', "a", "a"),
        ('{"x": {"s": 0.5, "t": 1, "s": 3.73}}', "s", "x.s"),
        ('{"x": [0, {"y": [{"k": 1, "k": 1}]}]}', "k", "x[1].y[0].k"),  # identical copies too
        ('{"sigma": 0.5, "\\u0073igma": 3.73}', "sigma", "sigma"),  # an escape spelling the same key
    ],
)
def test_loader_refuses_duplicate_keys_naming_key_and_path(text, key, path):
    assert json.loads(text) is not None  # Python's own reader accepts every one of them
    with pytest.raises(_json.JSONFormatError) as caught:
        _json.loads(text, what="document")
    assert caught.value.key == key and caught.value.path == path
    assert f"duplicate key {key!r} at {path}" in str(caught.value)
    assert isinstance(caught.value, CertificateFormatError) and isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    ("text", "detail", "path"),
    [
        ('{"a": NaN}', "NaN", "a"),
        ('[1, {"b": Infinity}]', "Infinity", "[1].b"),
        ('{"c": -Infinity}', "-Infinity", "c"),
        ('{"d": [1e999]}', "1e999", "d[0]"),  # Python reads it as inf
    ],
)
def test_loader_refuses_non_finite_numbers_unless_allowed(text, detail, path):
    with pytest.raises(_json.JSONFormatError) as caught:
        _json.loads(text)
    assert caught.value.key == detail and caught.value.path == path and detail in str(caught.value)
    lenient = _json.loads(text, allow_nan=True)
    assert json.dumps(lenient) == json.dumps(json.loads(text))


def test_loader_refuses_syntax_errors_and_non_text():
    with pytest.raises(_json.JSONFormatError, match="report is not valid JSON"):
        _json.loads('{"a": 1', what="report")
    with pytest.raises(_json.JSONFormatError, match="expected text"):
        _json.loads(None)  # type: ignore[arg-type]
    with pytest.raises(_json.JSONFormatError, match="not valid JSON"):
        _json.loads("[" * 100_000 + "]" * 100_000)  # nesting too deep for the parser


# --------------------------------------------------------------------------- labels
@pytest.mark.parametrize("label", ["integer-exact", "banana", ""])
def test_float_sampler_certificates_relabelled_are_refused_naming_the_label(label):
    for certificate in (gaussian_certificate(3.0, delta=1e-5), laplace_certificate(2.0)):
        data = certificate.to_dict()
        assert data["parameters"]["sampler"] == "float" and certificate.sampler == "float"
        data["parameters"]["sampler"] = label
        with pytest.raises(CertificateFormatError, match=r"label 'sampler' is .*allowed 'float'"):
            Certificate.from_json(json.dumps(data))
        relabelled = Certificate(
            data["mechanism"], certificate.guarantee, parameters=data["parameters"], basis=certificate.basis
        )
        with pytest.raises(CertificateFormatError, match="'sampler'"):
            relabelled.verify()


def test_integer_exact_certificates_relabelled_are_refused_and_discrete_laplace_takes_both():
    exact = discrete_gaussian_certificate(2.0, delta=1e-5)
    assert exact.sampler == "integer-exact" and exact.integer_exact
    data = exact.to_dict()
    data["parameters"]["sampler"] = "float"
    with pytest.raises(CertificateFormatError, match="'sampler'.*allowed 'integer-exact'"):
        Certificate.from_json(json.dumps(data))
    for sampler in ("integer-exact", "float"):
        certificate = discrete_laplace_certificate(0.5, sampler=sampler)
        assert Certificate.from_json(certificate.to_json()) == certificate
        # the discrete Laplace profile is the same whichever sampler drew the noise: the label is a
        # declaration the profile cannot check, so it never vouches for an integer-exact sampler
        assert certificate.sampler is None and not certificate.integer_exact
    data = discrete_laplace_certificate(0.5, sampler="float").to_dict()
    data["parameters"]["sampler"] = "banana"
    with pytest.raises(CertificateFormatError, match="label 'sampler' is 'banana'"):
        Certificate.from_json(json.dumps(data))
    assert approximate_dp_certificate(1.0).sampler is None  # a mechanism without a sampler


def test_unknown_keys_are_refused_at_every_level_of_a_certificate():
    base = gaussian_certificate(3.0, delta=1e-5).to_dict()
    for where, key in [((), "sampler"), (("parameters",), "samplr"), (("guarantee",), "epsilon_prime")]:
        data = json.loads(json.dumps(base))
        target = data
        for step in where:
            target = target[step]
        target[key] = 1.0
        with pytest.raises(CertificateFormatError, match=repr(key)):
            Certificate.from_json(json.dumps(data))
    data = json.loads(json.dumps(base))
    del data["guarantee"]["delta"]
    with pytest.raises(CertificateFormatError, match="no key 'delta'"):
        Certificate.from_json(json.dumps(data))
    for member, value in [("notes", "one note"), ("basis", 3), ("parameters", [1])]:
        with pytest.raises(CertificateFormatError, match=repr(member)):
            Certificate.from_json(json.dumps(dict(base, **{member: value})))
    data = json.loads(json.dumps(base))
    data["guarantee"]["epsilon"] = True  # a boolean is not a number, not 1.0
    with pytest.raises(CertificateFormatError, match="epsilon"):
        Certificate.from_json(json.dumps(data))


def test_parameter_spec_choices_are_validated_and_compared_with_their_type():
    assert ParameterSpec("string", choices=["a", "b"]).choices == ("a", "b")
    for bad in ["float", ("a", 1), (), 3]:
        with pytest.raises(InvalidParameter, match="choices"):
            ParameterSpec("string", choices=bad)  # type: ignore[arg-type]
    spec = ParameterSpec("integer", choices=(1, 2))
    assert spec.allows(1) and spec.allows(2) and not spec.allows(3)
    assert not spec.allows(True) and not spec.allows(1.0)  # 1 == True == 1.0 in Python, not here


# --------------------------------------------------------------------------- duplicate keys in documents
def test_certificates_with_duplicate_keys_are_refused_at_the_top_and_nested():
    honest = gaussian_certificate(3.73, delta=1e-5)
    forged_claim = {"epsilon": 0.1, "delta": 1e-5}
    text = dumps_with_duplicate(honest.to_dict(), (), "guarantee", forged_claim)
    assert Certificate.from_dict(json.loads(text)) == honest  # last copy: what Python alone would verify
    with pytest.raises(_json.JSONFormatError, match="duplicate key 'guarantee' at guarantee") as caught:
        Certificate.from_json(text)
    assert caught.value.key == "guarantee"

    text = dumps_with_duplicate(honest.to_dict(), ("parameters",), "sigma", 0.5)
    with pytest.raises(CertificateFormatError, match="duplicate key 'sigma' at parameters.sigma"):
        Certificate.from_json(text)


def test_a_duplicate_deep_inside_a_composition_is_refused_with_its_path():
    from dpcert.accounting.composition import compose

    composed = compose(
        [gaussian_certificate(3.0, delta=1e-6), laplace_certificate(10.0)], method="basic", delta=1e-5
    )
    data = composed.to_dict()
    assert data["mechanism"] == "composition"
    first = data["parameters"]["components"][0]["certificate"]
    key = next(iter(first["parameters"]))
    text = dumps_with_duplicate(data, ("parameters", "components", 0, "certificate", "parameters"), key, 0.5)
    with pytest.raises(_json.JSONFormatError) as caught:
        Certificate.from_json(text)
    assert caught.value.key == key
    assert caught.value.path == f"parameters.components[0].certificate.parameters.{key}"


def test_audit_reports_with_duplicate_keys_are_refused():
    from dpcert.audits import AuditReport, audit
    from dpcert.audits.reference_mechanisms import laplace_noise

    report = audit(laplace_noise(1.0), 0.0, 1.0, 1.0, samples=5_000, seed=7)
    data = report.to_dict()
    assert AuditReport.from_json(json.dumps(data)).verdict == report.verdict
    text = dumps_with_duplicate(
        data, (), "verdict", "violated" if report.verdict == "consistent" else "consistent"
    )
    assert AuditReport.from_dict(json.loads(text)).verdict == report.verdict  # last copy wins in Python
    with pytest.raises(CertificateFormatError, match="duplicate key 'verdict' at verdict"):
        AuditReport.from_json(text)
    text = dumps_with_duplicate(data, ("counts",), "in_set_numerator", 0)
    with pytest.raises(
        CertificateFormatError, match="duplicate key 'in_set_numerator' at counts.in_set_numerator"
    ):
        AuditReport.from_json(text)
    bad = json.dumps(data).replace(f'"seconds": {json.dumps(data["seconds"])}', '"seconds": NaN')
    with pytest.raises(CertificateFormatError, match="NaN at seconds"):
        AuditReport.from_json(bad)


# --------------------------------------------------------------------------- signed documents
@pytest.fixture(scope="module")
def keys():
    pytest.importorskip("cryptography")
    from dpcert.signatures import generate_private_key

    private = generate_private_key()
    return private, private.public_key()


def test_signed_certificate_with_a_duplicated_sigma_is_refused_before_the_signature(keys):
    from dpcert import signatures

    private, public = keys
    signed = json.loads(gaussian_certificate(3.73, delta=1e-5).sign(private, signer="Team"))
    text = dumps_with_duplicate(signed, ("parameters",), "sigma", 0.5)
    assert '"sigma": 0.5, "sigma": 3.73' in text
    # Python keeps 3.73, so the signature and the claim would both check out: a first-copy reader
    # would see a sigma = 0.5 release under the same signature
    assert Certificate.from_dict(json.loads(text), public_key=public).parameters["sigma"] == 3.73
    with pytest.raises(_json.JSONFormatError, match="duplicate key 'sigma' at parameters.sigma"):
        Certificate.from_json(text, public_key=public)
    with pytest.raises(_json.JSONFormatError) as caught:
        signatures.load_document(text, public)
    assert caught.value.key == "sigma"
    document, info = signatures.load_document(json.dumps(signed), public)  # the genuine file passes
    assert info is not None and info.verified and document == signed


def test_signature_members_with_duplicate_or_unknown_keys_are_refused(keys):
    from dpcert import signatures

    private, public = keys
    signed = json.loads(gaussian_certificate(3.0, delta=1e-5).sign(private, signer="Team"))
    text = dumps_with_duplicate(signed, ("signature",), "signer", "Someone else")
    with pytest.raises(_json.JSONFormatError, match="duplicate key 'signer' at signature.signer"):
        signatures.load_document(text, public)
    extended = dict(signed, signature=dict(signed["signature"], comment="x"))
    with pytest.raises(signatures.SignatureInvalid, match="unknown key 'comment'"):
        signatures.read_signature(extended, public)


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    from dpcert.cli import main

    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_cli_verify_refuses_duplicates_and_relabelled_samplers_as_bad_input(keys, tmp_path, capsys):
    from dpcert.audits import audit
    from dpcert.audits.reference_mechanisms import laplace_noise
    from dpcert.signatures import private_key_pem, public_key_pem, sign_document

    private, _ = keys
    (tmp_path / "team.pub.pem").write_bytes(public_key_pem(private))
    genuine = json.loads(gaussian_certificate(3.73, delta=1e-5).sign(private, signer="Team"))
    (tmp_path / "genuine.json").write_text(json.dumps(genuine))
    assert (
        _cli(
            capsys, "verify", str(tmp_path / "genuine.json"), "--public-key", str(tmp_path / "team.pub.pem")
        )[0]
        == 0
    )

    relabelled = gaussian_certificate(3.73, delta=1e-5).to_dict()
    relabelled["parameters"]["sampler"] = "integer-exact"
    report = audit(laplace_noise(1.0), 0.0, 1.0, 1.0, samples=5_000, seed=7).to_dict()
    cases = {
        "top.json": dumps_with_duplicate(genuine, (), "guarantee", {"epsilon": 0.1, "delta": 1e-5}),
        "nested.json": dumps_with_duplicate(genuine, ("parameters",), "sigma", 0.5),
        "report.json": dumps_with_duplicate(sign_document(report, private), ("counts",), "numerator", 0),
        "relabelled.json": json.dumps(sign_document(relabelled, private, signer="Team")),
        "nan.json": json.dumps(genuine).replace('"basis": ', '"basis": NaN, "x": '),
    }
    expected = {
        "top.json": "duplicate key 'guarantee'",
        "nested.json": "duplicate key 'sigma' at parameters.sigma",
        "report.json": "duplicate key 'numerator' at counts.numerator",
        "relabelled.json": "label 'sampler' is 'integer-exact'",
        "nan.json": "NaN at basis",
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        status, out, err = _cli(
            capsys, "verify", str(tmp_path / name), "--public-key", str(tmp_path / "team.pub.pem")
        )
        assert status == 2, (name, err)  # malformed input: exit 2, one line naming the key
        assert expected[name] in err and err.count("\n") == 1, (name, err)
        assert out == ""
    # signing refuses the same files and writes nothing
    (tmp_path / "team.pem").write_bytes(private_key_pem(private))
    status, _, err = _cli(capsys, "sign", str(tmp_path / "nested.json"), "--key", str(tmp_path / "team.pem"))
    assert status == 2 and "duplicate key 'sigma'" in err
    assert not (tmp_path / "nested.signed.json").exists()


# --------------------------------------------------------------------------- the registry
class LenientGaussian:
    """A profile that certifies anything: what a careless or hostile import could register."""

    def __init__(self, parameters: Any) -> None:
        self.parameters = parameters

    def delta_for(self, epsilon: float) -> float:
        return 0.0

    def epsilon_for(self, delta: float) -> float:
        return 0.0

    def dp_event(self) -> Any:
        return None


LENIENT_SPECS = {
    "sigma": ParameterSpec("number"),
    "sensitivity": ParameterSpec("number", required=False),
    "compositions": ParameterSpec("integer", required=False),
    "sampler": ParameterSpec("string", required=False),
}


def _forged_gaussian() -> str:
    """σ = 0.5 on a sensitivity-1 query claiming (0.1, 1e-5): true δ(0.1) is about 0.67."""
    assert gaussian_delta_closed_form(0.1, 0.5) > 0.6
    data = {
        "format": "dpcert.certificate/1",
        "mechanism": "gaussian",
        "guarantee": {"epsilon": 0.1, "delta": 1e-5},
        "trust_model": "central",
        "neighbouring": "replace-one",
        "parameters": {"sigma": 0.5, "sensitivity": 1.0, "compositions": 1, "sampler": "float"},
        "basis": "forged",
        "notes": [],
    }
    return json.dumps(data)


def test_a_lenient_gaussian_is_refused_and_the_forged_certificate_still_fails():
    original = registration_for("gaussian")
    assert original.factory is GaussianProfile
    with pytest.raises(InvalidParameter) as caught:
        register_profile("gaussian", parameters=LENIENT_SPECS)(LenientGaussian)
    assert caught.value.name == "mechanism" and caught.value.value == "gaussian"
    assert "dpcert.mechanisms.gaussian_profile.GaussianProfile" in str(caught.value) and "force=True" in str(
        caught.value
    )
    assert registration_for("gaussian") is original
    with pytest.raises(CertificateMismatch):
        Certificate.from_json(_forged_gaussian())
    # the refusal is right: the closed form gives δ(0.1) far above the claimed 1e-5, and dpcert agrees
    proven = Certificate.from_json(_forged_gaussian(), verify=False).delta_for(0.1)
    assert math.isclose(proven, gaussian_delta_closed_form(0.1, 0.5), rel_tol=1e-9)


def test_force_replaces_a_registration_and_the_original_is_restored():
    original = registration_for("gaussian")
    try:
        register_profile("gaussian", parameters=LENIENT_SPECS, force=True)(LenientGaussian)
        assert registration_for("gaussian").factory is LenientGaussian
        assert Certificate.from_json(_forged_gaussian()).epsilon == 0.1  # what force=True makes possible
    finally:
        register_profile(
            "gaussian",
            parameters=original.parameters,
            trust_models=original.trust_models,
            neighbourings=original.neighbourings,
            force=True,
        )(original.factory)
    assert registration_for("gaussian").factory is GaussianProfile
    assert registration_for("gaussian").parameters == original.parameters
    with pytest.raises(CertificateMismatch):
        Certificate.from_json(_forged_gaussian())


def test_the_generic_profile_and_bad_arguments_are_refused():
    with pytest.raises(InvalidParameter, match="approximate-dp"):
        register_profile("approximate-dp", parameters={"epsilon": ParameterSpec("number")})(LenientGaussian)
    with pytest.raises(InvalidParameter, match="force"):
        register_profile("x-test", parameters={}, force="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="ParameterSpec"):
        register_profile("x-test", parameters={"a": "number"})  # type: ignore[dict-item]
    with pytest.raises(InvalidParameter, match="mechanism"):
        register_profile("", parameters={})


def test_reloading_the_registering_module_replaces_its_own_registration(tmp_path, monkeypatch):
    from dpcert import profiles

    (tmp_path / "labels_reload_fixture.py").write_text(
        textwrap.dedent(
            """
            from dpcert.profiles import ParameterSpec, register_profile

            @register_profile("labels-reload-fixture", parameters={"epsilon": ParameterSpec("number")})
            class FixtureProfile:
                def __init__(self, parameters):
                    self.epsilon = parameters["epsilon"]

                def delta_for(self, epsilon):
                    return 0.0 if epsilon >= self.epsilon else 1.0

                def epsilon_for(self, delta):
                    return self.epsilon

                def dp_event(self):
                    return None
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        module = importlib.import_module("labels_reload_fixture")
        first = registration_for("labels-reload-fixture").factory
        reloaded = importlib.reload(module)
        assert registration_for("labels-reload-fixture").factory is reloaded.FixtureProfile is not first
        assert registration_for("labels-reload-fixture").origin == "labels_reload_fixture.FixtureProfile"
        certificate = Certificate(
            "labels-reload-fixture", Guarantee(1.0), parameters={"epsilon": 1.0}
        ).verify()
        assert certificate.epsilon == 1.0
        with pytest.raises(InvalidParameter, match="labels-reload-fixture"):  # another class: refused
            register_profile("labels-reload-fixture", parameters={})(LenientGaussian)
    finally:
        sys.modules.pop("labels_reload_fixture", None)
        profiles._PROFILES.pop("labels-reload-fixture", None)


def test_a_builtin_name_is_protected_in_a_fresh_process():
    # a fresh interpreter: a lenient profile registered under a built-in name is refused, and the
    # built-in profile stays the one certificates are read with
    script = textwrap.dedent(
        """
        import sys
        from dpcert.profiles import ParameterSpec, register_profile, registration_for
        from dpcert.errors import InvalidParameter

        class Lenient:
            def __init__(self, parameters): pass
            def delta_for(self, epsilon): return 0.0
            def epsilon_for(self, delta): return 0.0
            def dp_event(self): return None

        try:
            register_profile("laplace", parameters={"scale": ParameterSpec("number")})(Lenient)
            print("accepted")
        except InvalidParameter as exc:
            print("refused", exc.name, exc.value)
        import dpcert.mechanisms.laplace as laplace
        print(registration_for("laplace").factory is laplace.LaplaceProfile)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=Path(__file__).parent
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["refused mechanism laplace", "True"]


# --------------------------------------------------------------------------- other command-line JSON
def test_command_line_json_inputs_refuse_duplicates_and_nan(tmp_path, capsys):
    from dpcert.cli import main
    from dpcert.cli.audit import parse_input
    from dpcert.cli.bandit import parse_options

    certificate = gaussian_certificate(3.0, delta=1e-6)
    good = tmp_path / "good.json"
    good.write_text(certificate.to_json())
    compose = ["account", "compose", "--delta", "1e-5", "--method", "basic", "--certificate"]
    assert main(compose + [str(good)]) == 0
    capsys.readouterr()
    forged = tmp_path / "forged.json"
    forged.write_text("[" + dumps_with_duplicate(certificate.to_dict(), ("parameters",), "sigma", 30.0) + "]")
    assert main(compose + [str(forged)]) == 2
    err = capsys.readouterr().err
    assert "duplicate key 'sigma' at [0].parameters.sigma" in err and err.count("\n") == 1

    matrix = tmp_path / "matrix.json"
    matrix.write_text("[[0.5, NaN], [0.5, 0.5]]")
    shuffle = ["account", "shuffle", "--epsilon0", "1", "--users", "100", "--delta", "1e-6"]
    assert main(shuffle + ["--randomizer", "matrix", "--matrix", str(matrix)]) == 2
    assert "NaN at [0][1]" in capsys.readouterr().err

    assert parse_options(['w={"a": 1}', "x=exact"]) == {"w": {"a": 1}, "x": "exact"}
    for bad, named in [('w={"a": 1, "a": 2}', "duplicate key 'a'"), ("w=NaN", "NaN")]:
        with pytest.raises(InvalidParameter, match=named):
            parse_options([bad])
    assert parse_input("--input", "[0, 1]").tolist() == [0.0, 1.0]
    with pytest.raises(InvalidParameter, match="duplicate key 'x'"):
        parse_input("--input", '{"x": 0, "x": 1}')
    with pytest.raises(InvalidParameter, match="Infinity"):
        parse_input("--input", "Infinity")
