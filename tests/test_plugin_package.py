"""A mechanism defined in another installed package is readable in any process.

The package under ``tests/plugin_example`` declares its k-ary randomized response profile in the
``dpcert.profiles`` entry-point group.  It is installed into a temporary directory; fresh processes with
that directory on ``PYTHONPATH`` charge a ledger with its certificate, and the ``dpcert`` console script
shows, verifies and composes it.  Without the package, reading the same ledger fails with one line
naming the mechanism and the group (exit 2: a precondition of the input is not met).  The built-in
profiles are found through the same group, which must name every module that registers one.
"""

from __future__ import annotations

import ast
import json
import math
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import plugin_environment, run_command

from dpcert.profiles import ENTRY_POINT_GROUP, builtin_profile_modules

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src"
SCRIPT = Path(sys.executable).with_name("dpcert")


def _registrations() -> dict[str, str]:
    """Mechanism name -> module, for every ``register_profile("name", ...)`` in dpcert's source."""
    found: dict[str, str] = {}
    for path in sorted((SOURCE / "dpcert").rglob("*.py")):
        module = ".".join(path.relative_to(SOURCE).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if name != "register_profile" or not node.args:
                continue
            first = node.args[0]
            assert isinstance(first, ast.Constant) and isinstance(first.value, str), (
                f"{module}: register_profile's mechanism name must be a string literal"
            )
            where = found.get(first.value)
            assert where is None, f"{first.value!r} is registered in {where} and in {module}"
            found[first.value] = module
    return found


def test_every_registered_builtin_profile_is_declared_in_the_entry_point_group():
    registrations = _registrations()
    assert len(registrations) >= 17  # the mechanisms dpcert ships (a vanished scan would be empty)
    assert dict(builtin_profile_modules()) == registrations


def test_the_installed_entry_points_are_those_of_pyproject():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = project["entry-points"][ENTRY_POINT_GROUP]
    assert dict(builtin_profile_modules()) == declared, "reinstall dpcert (pip install -e .)"


CHARGE = textwrap.dedent(
    """
    import sys
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from dpcert.certificates import Guarantee
    from dpcert.ledger.api import Ledger
    from dpcert_plugin_example import k_rr_certificate

    certificate = k_rr_certificate(4, 0.7)
    open("k_rr.json", "w").write(certificate.to_json())
    key = Ed25519PrivateKey.generate()
    open("k_rr.signed.json", "w").write(certificate.sign(key, signer="plugin test"))
    open("public.pem", "wb").write(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    with Ledger("ledger.db") as ledger:
        ledger.set_budget(None, Guarantee(10.0, 1e-6))
        ledger.charge([1, 2], certificate)
        ledger.charge([1], certificate)
    print(certificate.epsilon)
    """
)


def test_a_plugin_certificate_is_charged_shown_verified_and_composed_afresh(plugin_example_install, tmp_path):
    pytest.importorskip("cryptography")
    if not SCRIPT.exists():
        pytest.skip("the dpcert console script is not installed")
    with_plugin = plugin_environment(plugin_example_install)
    charged = run_command([sys.executable, "-c", CHARGE], with_plugin, tmp_path)
    assert charged.returncode == 0, charged.stderr
    # closed form: p = 0.7, b = 0.3 / 3 = 0.1, epsilon0 = ln(p / b) = ln 7
    assert float(charged.stdout) == pytest.approx(math.log(7.0), rel=1e-12, abs=0.0)
    assert float(charged.stdout) >= math.log(7.0)  # rounded up, never down

    shown = run_command(
        [str(SCRIPT), "ledger", "show", "--json", "--delta", "0", "ledger.db"],
        with_plugin,
        tmp_path,
    )
    assert shown.returncode == 0, shown.stderr
    summary = json.loads(shown.stdout)
    assert summary["max_user"] == 1 and summary["charges"] == 3
    # user 1 took part twice: two pure-DP reports compose to 2 ln 7 at delta = 0 (Dwork & Roth 2014, Thm 3.16)
    assert summary["max_user_epsilon"] == pytest.approx(2.0 * math.log(7.0), rel=1e-12, abs=0.0)

    verified = run_command([str(SCRIPT), "ledger", "verify", "ledger.db"], with_plugin, tmp_path)
    assert verified.returncode == 0, verified.stderr

    composed = run_command(
        [str(SCRIPT), "account", "compose", "--json", "--certificate", "k_rr.json", "--count", "3"]
        + ["--delta", "0"],
        with_plugin,
        tmp_path,
    )
    assert composed.returncode == 0, composed.stderr
    assert json.loads(composed.stdout)["epsilon"] == pytest.approx(3.0 * math.log(7.0), rel=1e-12, abs=0.0)

    signed = run_command(
        [str(SCRIPT), "verify", "--json", "--public-key", "public.pem", "k_rr.signed.json"],
        with_plugin,
        tmp_path,
    )
    assert signed.returncode == 0, signed.stderr

    # the same ledger and certificate without the package: one line naming the mechanism and the group
    without = plugin_environment()
    for args in (
        [str(SCRIPT), "ledger", "show", "ledger.db"],
        # cannot be verified here (exit 2), which is not evidence of tampering (exit 1)
        [str(SCRIPT), "ledger", "verify", "ledger.db"],
        [str(SCRIPT), "account", "compose", "--certificate", "k_rr.json", "--delta", "0"],
    ):
        result = run_command(args, without, tmp_path)
        assert result.returncode == 2, (args, result.returncode, result.stderr)
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
        assert "unknown mechanism 'example-k-rr'" in lines[0], lines[0]
        assert f"entry-point group '{ENTRY_POINT_GROUP}'" in lines[0], lines[0]


SHADOW = textwrap.dedent(
    """
    import sys
    from dpcert.certificates import Certificate
    from dpcert.errors import InvalidParameter
    from dpcert.mechanisms.gaussian import GaussianProfile, gaussian_certificate

    text = gaussian_certificate(2.0, delta=1e-5).to_json()
    # a fresh process reading a Gaussian certificate: dpcert's own profile, not the package's
    certificate = Certificate.from_json(text)
    assert type(certificate.profile) is GaussianProfile
    print("shadow imported:", "shadow_profile" in sys.modules)
    try:
        import shadow_profile
    except InvalidParameter as exc:
        print("refused:", exc.name, exc.value)
    """
)


def test_another_package_cannot_shadow_a_builtin_profile(tmp_path):
    # an installed distribution declaring the built-in name "gaussian" in the group
    dist = tmp_path / "shadow-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: shadow\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\ngaussian = shadow_profile\n")
    (tmp_path / "shadow_profile.py").write_text(
        textwrap.dedent(
            """
            from dpcert.profiles import ParameterSpec, register_profile

            @register_profile("gaussian", parameters={"sigma": ParameterSpec("number")})
            class Lenient:
                def __init__(self, parameters): pass
                def delta_for(self, epsilon): return 0.0
                def epsilon_for(self, delta): return 0.0
                def dp_event(self): return None
            """
        )
    )
    done = run_command([sys.executable, "-c", SHADOW], plugin_environment(tmp_path), tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["shadow imported: False", "refused: mechanism gaussian"]
