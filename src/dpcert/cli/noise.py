"""``dpcert calibrate gaussian|laplace`` and ``dpcert account gaussian|laplace``."""

from __future__ import annotations

import argparse

from dpcert.cli._common import (
    EXIT_OK,
    ONE_OF,
    CommandGroups,
    LazyChoices,
    certificate_rows,
    delta_value,
    emit,
    integer,
    positive,
)

GAUSSIAN_METHODS = LazyChoices("dpcert.accounting.calibration", "GAUSSIAN_METHODS")


def register(groups: CommandGroups) -> None:
    parser = groups.add(
        "calibrate", "gaussian", "least Gaussian sigma for (epsilon, delta)", _calibrate_gaussian
    )
    parser.add_argument("--epsilon", type=positive, required=True)
    parser.add_argument("--delta", type=delta_value, required=True)
    parser.add_argument("--sensitivity", type=positive, default=1.0, help="l2-sensitivity (default 1)")
    parser.add_argument(
        "--compositions", type=integer, default=1, help="number of releases with this sigma (default 1)"
    )
    parser.add_argument("--method", choices=GAUSSIAN_METHODS, default="analytic", **ONE_OF)

    parser = groups.add("calibrate", "laplace", "least Laplace scale for epsilon-DP", _calibrate_laplace)
    parser.add_argument("--epsilon", type=positive, required=True)
    parser.add_argument("--sensitivity", type=positive, default=1.0, help="l1-sensitivity (default 1)")

    parser = groups.add(
        "account", "gaussian", "epsilon of a (k-fold) Gaussian mechanism at delta", _account_gaussian
    )
    parser.add_argument("--sigma", type=positive, required=True)
    parser.add_argument("--delta", type=delta_value, required=True)
    parser.add_argument("--sensitivity", type=positive, default=1.0)
    parser.add_argument("--compositions", type=integer, default=1)

    parser = groups.add("account", "laplace", "epsilon of a Laplace mechanism", _account_laplace)
    parser.add_argument("--scale", type=positive, required=True)
    parser.add_argument("--sensitivity", type=positive, default=1.0)
    parser.add_argument(
        "--delta",
        type=delta_value,
        default=0.0,
        help="report the least epsilon at this delta (default 0: pure DP)",
    )


def _calibrate_gaussian(args: argparse.Namespace) -> int:
    from dpcert.accounting.calibration import calibrate_gaussian

    result = calibrate_gaussian(
        args.epsilon,
        args.delta,
        sensitivity=args.sensitivity,
        compositions=args.compositions,
        method=args.method,
    )
    emit(
        args,
        {"sigma": result.sigma, "method": result.method, "certificate": result.certificate.to_dict()},
        [("sigma", result.sigma), ("method", result.method)] + certificate_rows(result.certificate),
    )
    return EXIT_OK


def _calibrate_laplace(args: argparse.Namespace) -> int:
    from dpcert.accounting.calibration import calibrate_laplace

    result = calibrate_laplace(args.epsilon, sensitivity=args.sensitivity)
    emit(
        args,
        {"scale": result.scale, "certificate": result.certificate.to_dict()},
        [("scale", result.scale)] + certificate_rows(result.certificate),
    )
    return EXIT_OK


def _account_gaussian(args: argparse.Namespace) -> int:
    from dpcert.mechanisms.gaussian import gaussian_certificate

    certificate = gaussian_certificate(
        args.sigma, delta=args.delta, sensitivity=args.sensitivity, compositions=args.compositions
    )
    emit(
        args,
        {"epsilon": certificate.epsilon, "delta": certificate.delta, "certificate": certificate.to_dict()},
        certificate_rows(certificate),
    )
    return EXIT_OK


def _account_laplace(args: argparse.Namespace) -> int:
    from dpcert.mechanisms.laplace import laplace_certificate

    certificate = laplace_certificate(args.scale, sensitivity=args.sensitivity, delta=args.delta)
    emit(
        args,
        {"epsilon": certificate.epsilon, "delta": certificate.delta, "certificate": certificate.to_dict()},
        certificate_rows(certificate),
    )
    return EXIT_OK
