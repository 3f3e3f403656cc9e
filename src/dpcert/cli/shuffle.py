"""``dpcert calibrate binomial-sum|shuffle`` and ``dpcert account binomial-sum|shuffle``."""

from __future__ import annotations

import argparse

from dpcert import _json, provenance
from dpcert.cli._common import (
    EXIT_OK,
    ONE_OF,
    CommandGroups,
    certificate_rows,
    delta_value,
    emit,
    integer,
    number,
    plot_certificate,
    positive,
    read_text_file,
)
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.shuffle.amplification import amplification_certificate
from dpcert.mechanisms.shuffle.binomial_sum import METHODS as SUM_METHODS
from dpcert.mechanisms.shuffle.binomial_sum import (
    NORMS,
    SHAPES,
    BitSumParameters,
    binomial_sum_certificate,
    calibrate_binomial_sum,
)
from dpcert.theory import amplification
from dpcert.theory.amplification import METHODS as SHUFFLE_METHODS
from dpcert.theory.amplification import RANDOMIZERS


def register(groups: CommandGroups) -> None:
    parser = groups.add(
        "calibrate",
        "binomial-sum",
        _calibrate_binomial_sum,
    )
    parser.add_argument("--epsilon", type=positive, required=True)
    parser.add_argument("--delta", type=delta_value, required=True)
    parser.add_argument("--users", type=integer, required=True, help="number N of users in one sum")
    parser.add_argument("--dimension", type=integer, default=1, help="d (default 1: scalars)")
    parser.add_argument("--bound", type=positive, default=1.0, help="every entry lies in [-B, B] (default 1)")
    parser.add_argument("--method", choices=SUM_METHODS, default="exact", **ONE_OF)
    parser.add_argument("--shape", choices=SHAPES, default="vector", **ONE_OF)
    parser.add_argument(
        "--norm",
        choices=NORMS,
        default="entry",
        metavar="NORM",
        help="%(choices)s (default %(default)s): entry: entries in [-B, B]; l2: l2 norm <= B (tighter)",
    )

    parser = groups.add(
        "calibrate",
        "shuffle",
        _calibrate_shuffle,
    )
    parser.add_argument("--epsilon", type=positive, required=True)
    parser.add_argument("--delta", type=delta_value, required=True)
    parser.add_argument("--users", type=integer, required=True)
    parser.add_argument("--method", choices=SHUFFLE_METHODS, default="numeric", **ONE_OF)
    _add_randomizer_arguments(parser)

    parser = groups.add("account", "binomial-sum", _account_binomial_sum)
    parser.add_argument("--g", type=integer, required=True, help="precision (encoded values in 0..g)")
    parser.add_argument("--b", type=integer, required=True, help="noise bits per user and coordinate")
    parser.add_argument("--p", type=number, required=True, help="probability of a noise bit being 1")
    parser.add_argument("--users", type=integer, required=True)
    parser.add_argument("--delta", type=delta_value, required=True)
    parser.add_argument("--dimension", type=integer, default=1)
    parser.add_argument("--bound", type=positive, default=1.0)
    parser.add_argument("--shape", choices=SHAPES, default="vector", **ONE_OF)
    parser.add_argument("--norm", choices=NORMS, default="entry", **ONE_OF)

    parser = groups.add("account", "shuffle", _account_shuffle)
    parser.add_argument("--epsilon0", type=positive, required=True)
    parser.add_argument("--users", type=integer, required=True)
    parser.add_argument("--delta", type=delta_value, required=True)
    parser.add_argument("--method", choices=SHUFFLE_METHODS, default="numeric", **ONE_OF)
    _add_randomizer_arguments(parser)


def _add_randomizer_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--randomizer",
        choices=RANDOMIZERS,
        default="generic",
        help="generic: any epsilon0-LDP randomizer (default); binary-rr: exact for small N, else the "
        "stronger clone bound; k-rr: the stronger clone bound (needs --categories); matrix: the clone "
        "bound of a stated randomizer (needs --matrix)",
        metavar="NAME",
    )
    parser.add_argument("--categories", type=integer, default=None, help="k of k-rr (k >= 2)")
    parser.add_argument(
        "--matrix",
        default=None,
        metavar="FILE",
        help="JSON file: the randomizer's probabilities, one row per input (with --randomizer matrix)",
    )


def _read_matrix(path: str | None) -> object:
    if path is None:
        return None
    text = read_text_file(path, "--matrix")
    return _json.loads(text, what=f"--matrix {path}")  # duplicate keys, NaN and Infinity refused


def _randomizer_options(args: argparse.Namespace) -> dict:
    matrix = _read_matrix(getattr(args, "matrix", None))
    if args.randomizer == "generic" and matrix is None:
        return {}
    if args.randomizer == "matrix" or matrix is not None:
        return {"randomizer": args.randomizer, "matrix": matrix}
    return {"randomizer": args.randomizer, "categories": args.categories}


NUMERIC_EPSILON0_RANGE = (1e-6, 700.0)
"""``--method numeric`` evaluates binomial laws with success probability ``exp(-epsilon0)``: below 1e-6
that probability rounds too close to 1 (relative error of ``1 - p`` above 1e-10, the method's rounding
allowance) and above 700 it underflows."""

NUMERIC_USERS_MAX = 10**7
"""``--method numeric`` sums over a window of about 16 sqrt(users) binomial counts per evaluation."""

NUMERIC_CALIBRATION_EPSILON_MAX = 300.0
"""``calibrate shuffle --method numeric`` searches epsilon0 up to twice the target epsilon."""


def _check_numeric_shuffle(name: str, value: float, high: float, users: int) -> None:
    if users > NUMERIC_USERS_MAX:
        raise InvalidParameter(
            "--users",
            users,
            f"users <= {NUMERIC_USERS_MAX:g} with --method numeric",
            hint="or use --method closed-form",
        )
    low = NUMERIC_EPSILON0_RANGE[0] if name == "--epsilon0" else 0.0
    if not low <= value <= high:
        allowed = f"{low:g} <= {name.lstrip('-')} <= {high:g} with --method numeric"
        raise InvalidParameter(name, value, allowed, hint="or use --method closed-form")


def _calibrate_binomial_sum(args: argparse.Namespace) -> int:
    result = calibrate_binomial_sum(
        args.epsilon,
        args.delta,
        users=args.users,
        dimension=args.dimension,
        bound=args.bound,
        shape=args.shape,
        method=args.method,
        norm=args.norm,
    )
    q = result.parameters
    payload = {
        "g": q.g,
        "b": q.b,
        "p": q.p,
        "epsilon": result.certificate.epsilon,
        "delta": result.certificate.delta,
        "noise_std": q.noise_std,
        "method": result.method,
        "bits_per_user": q.bits_per_user,
        "certificate": result.certificate.to_dict(),
    }
    rows = [("g", q.g), ("b", q.b), ("p", q.p), ("noise std", q.noise_std), ("method", result.method)]
    emit(
        args,
        payload,
        rows + certificate_rows(result.certificate, neighbouring=False),
        record=provenance.CALCULATION,
    )
    return EXIT_OK


def _calibrate_shuffle(args: argparse.Namespace) -> int:
    if args.method == "numeric":
        _check_numeric_shuffle("--epsilon", args.epsilon, NUMERIC_CALIBRATION_EPSILON_MAX, args.users)
    options = _randomizer_options(args)
    epsilon0 = amplification.largest_local_epsilon(
        args.epsilon, args.delta, args.users, args.method, **options
    )
    certificate = amplification_certificate(
        epsilon0, args.users, epsilon=args.epsilon, delta=args.delta, method=args.method, **options
    )
    emit(
        args,
        {"epsilon0": epsilon0, "method": args.method, "certificate": certificate.to_dict()},
        [("epsilon0", epsilon0), ("method", args.method)] + certificate_rows(certificate, neighbouring=False),
        record=provenance.CALCULATION,
    )
    return EXIT_OK


def _account_binomial_sum(args: argparse.Namespace) -> int:
    parameters = BitSumParameters(
        args.g, args.b, args.p, args.users, args.dimension, args.bound, args.shape, args.norm
    )
    certificate = binomial_sum_certificate(parameters, delta=args.delta)
    emit(
        args,
        {
            "epsilon": certificate.epsilon,
            "delta": certificate.delta,
            "noise_std": parameters.noise_std,
            "certificate": certificate.to_dict(),
        },
        [("noise std", parameters.noise_std)] + certificate_rows(certificate, neighbouring=False),
        record=provenance.CALCULATION,
    )
    plot_certificate(args, certificate)
    return EXIT_OK


def _account_shuffle(args: argparse.Namespace) -> int:
    if args.method == "numeric":
        _check_numeric_shuffle("--epsilon0", args.epsilon0, NUMERIC_EPSILON0_RANGE[1], args.users)
    certificate = amplification_certificate(
        args.epsilon0, args.users, delta=args.delta, method=args.method, **_randomizer_options(args)
    )
    payload = {"epsilon": certificate.epsilon, "delta": certificate.delta, "method": args.method}
    rows = certificate_rows(certificate, neighbouring=False)
    if args.method == "closed-form":
        holds = amplification.closed_form_precondition(args.epsilon0, args.users, args.delta)
        payload["closed_form_precondition"] = holds
        rows.append(
            ("closed-form precondition", "holds" if holds else "fails: epsilon = epsilon0 (no amplification)")
        )
    payload["certificate"] = certificate.to_dict()
    emit(args, payload, rows, record=provenance.CALCULATION)
    plot_certificate(args, certificate)
    return EXIT_OK
