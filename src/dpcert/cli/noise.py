"""``dpcert calibrate laplace|discrete-gaussian|dp-sgd``, ``dpcert account gaussian|laplace|dp-sgd``.

``calibrate gaussian`` is in :mod:`dpcert.cli.gaussian`, apart from its ``--secure`` form
(:func:`calibrate_secure_gaussian`, here).  ``--secure`` calibrates the integer-exact mechanism on a
grid (:mod:`dpcert.mechanisms.secure.noise`); without it the certificate is backed by a
floating-point sampler and a one-line warning is printed on stderr unless ``--research`` says the
noise is for research use.
"""

from __future__ import annotations

import argparse
from typing import Any

from dpcert import provenance
from dpcert.accounting.dp_sgd import SAMPLINGS, calibrate_dp_sgd, dp_sgd_certificate, dp_sgd_schedule
from dpcert.cli._common import (
    EXIT_OK,
    CommandGroups,
    certificate_rows,
    delta_value,
    emit,
    integer,
    number,
    plot_certificate,
    positive,
)
from dpcert.cli.gaussian import add_sampler_options, check_granularity, warn_float_sampler
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.discrete_gaussian import calibrate_discrete_gaussian
from dpcert.mechanisms.gaussian import gaussian_certificate
from dpcert.mechanisms.laplace import calibrate_laplace, laplace_certificate
from dpcert.mechanisms.secure.noise import (
    SecureGaussianMechanism,
    SecureLaplaceMechanism,
    secure_gaussian,
    secure_laplace,
)


def register(groups: CommandGroups) -> None:
    parser = groups.add("calibrate", "laplace", _calibrate_laplace)
    parser.add_argument("--epsilon", type=positive, required=True)
    parser.add_argument("--sensitivity", type=positive, default=1.0, help="l1-sensitivity (default 1)")
    add_sampler_options(parser)

    parser = groups.add(
        "calibrate",
        "discrete-gaussian",
        _calibrate_discrete_gaussian,
    )
    parser.add_argument("--epsilon", type=positive, required=True)
    parser.add_argument("--delta", type=delta_value, required=True)
    parser.add_argument("--sensitivity", type=integer, default=1, help="integer sensitivity (default 1)")
    parser.add_argument(
        "--compositions", type=integer, default=1, help="number of releases with this sigma (default 1)"
    )

    parser = groups.add(
        "calibrate",
        "dp-sgd",
        _calibrate_dp_sgd,
    )
    parser.add_argument("--epsilon", type=positive, required=True)
    parser.add_argument("--delta", type=delta_value, required=True)
    _add_dp_sgd_schedule(parser)

    parser = groups.add("account", "gaussian", _account_gaussian)
    parser.add_argument("--sigma", type=positive, required=True)
    parser.add_argument("--delta", type=delta_value, required=True)
    parser.add_argument("--sensitivity", type=positive, default=1.0)
    parser.add_argument("--compositions", type=integer, default=1)

    parser = groups.add(
        "account",
        "dp-sgd",
        _account_dp_sgd,
    )
    parser.add_argument(
        "--noise-multiplier", type=positive, required=True, help="z: noise sd = z * sensitivity"
    )
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--delta", type=delta_value, help="report the least epsilon at this delta")
    target.add_argument("--epsilon", type=number, help="report the least delta at this epsilon")
    _add_dp_sgd_schedule(parser)

    parser = groups.add("account", "laplace", _account_laplace)
    parser.add_argument("--scale", type=positive, required=True)
    parser.add_argument("--sensitivity", type=positive, default=1.0)
    parser.add_argument(
        "--delta",
        type=delta_value,
        default=0.0,
        help="report the least epsilon at this delta (default 0: pure DP)",
    )


def _add_dp_sgd_schedule(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sampling-probability", type=positive, default=None, metavar="Q", help="Poisson sampling rate q"
    )
    parser.add_argument(
        "--batch-size", type=integer, default=None, metavar="B", help="B (with --dataset-size)"
    )
    parser.add_argument(
        "--dataset-size", type=integer, default=None, metavar="N", help="N (with --batch-size)"
    )
    length = parser.add_mutually_exclusive_group(required=True)
    length.add_argument("--steps", type=integer, default=None, metavar="T")
    length.add_argument(
        "--epochs",
        type=integer,
        default=None,
        metavar="E",
        help="E epochs of ceil(N/B) steps (or ceil(1/q) with --sampling-probability)",
    )
    parser.add_argument(
        "--sampling",
        choices=SAMPLINGS,
        default="poisson",
        metavar="NAME",
        help="%(choices)s (default %(default)s): poisson: add/remove; shuffle: B of N records drawn "
        "without replacement at every step, replace-one (needs --batch-size and --dataset-size)",
    )
    parser.add_argument(
        "--sensitivity",
        type=positive,
        default=1.0,
        help="l2-sensitivity of a batch's gradient sum (default 1): clip norm C (poisson), 2C (shuffle)",
    )


def _schedule_options(args: argparse.Namespace) -> dict:
    return {
        "steps": args.steps,
        "epochs": args.epochs,
        "sampling_probability": args.sampling_probability,
        "batch_size": args.batch_size,
        "dataset_size": args.dataset_size,
        "sampling": args.sampling,
        "sensitivity": args.sensitivity,
    }


def _schedule_payload(schedule: Any) -> dict:
    return {
        "sampling": schedule.sampling,
        "sampling_probability": schedule.sampling_probability,
        "steps": schedule.steps,
        "batch_size": schedule.batch_size,
        "dataset_size": schedule.dataset_size,
    }


def _schedule_rows(schedule: Any) -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = [
        ("sampling", schedule.sampling),
        ("sampling probability", schedule.sampling_probability),
        ("steps", schedule.steps),
    ]
    if schedule.batch_size is not None:
        rows += [("batch size", schedule.batch_size), ("dataset size", schedule.dataset_size)]
    return rows


def _calibrate_dp_sgd(args: argparse.Namespace) -> int:
    result = calibrate_dp_sgd(epsilon=args.epsilon, delta=args.delta, **_schedule_options(args))
    emit(
        args,
        {
            "noise_multiplier": result.noise_multiplier,
            "sigma": result.sigma,
            **_schedule_payload(result.schedule),
            "search": result.search.to_dict(),
            "certificate": result.certificate.to_dict(),
        },
        [("noise multiplier", result.noise_multiplier), ("sigma", result.sigma)]
        + _schedule_rows(result.schedule)
        + [("evaluations", result.search.evaluations)]
        + certificate_rows(result.certificate),
        record=provenance.CALCULATION,
    )
    return EXIT_OK


def _account_dp_sgd(args: argparse.Namespace) -> int:
    options = _schedule_options(args)
    sensitivity = options.pop("sensitivity")
    schedule = dp_sgd_schedule(**options)
    certificate = dp_sgd_certificate(
        args.noise_multiplier,
        epsilon=args.epsilon,
        delta=args.delta,
        sensitivity=sensitivity,
        **options,
    )
    emit(
        args,
        {
            "epsilon": certificate.epsilon,
            "delta": certificate.delta,
            "noise_multiplier": args.noise_multiplier,
            **_schedule_payload(schedule),
            "certificate": certificate.to_dict(),
        },
        [("noise multiplier", args.noise_multiplier)]
        + _schedule_rows(schedule)
        + certificate_rows(certificate),
        record=provenance.CALCULATION,
    )
    plot_certificate(args, certificate)
    return EXIT_OK


def _calibrate_secure(args: argparse.Namespace, kind: str) -> int:
    if kind == "gaussian":
        if args.method != "analytic":
            raise InvalidParameter("--method", args.method, "analytic with --secure")
        gaussian = secure_gaussian(
            args.epsilon,
            args.delta,
            sensitivity=args.sensitivity,
            compositions=args.compositions,
            granularity=args.granularity,
        )
        mechanism: SecureGaussianMechanism | SecureLaplaceMechanism = gaussian
        noise = ("sigma", gaussian.real_sigma)
    else:
        laplace = secure_laplace(args.epsilon, sensitivity=args.sensitivity, granularity=args.granularity)
        mechanism, noise = laplace, ("scale", laplace.scale)
    certificate = mechanism.certificate
    granularity = mechanism.grid.granularity
    emit(
        args,
        {
            noise[0]: noise[1],
            "granularity": granularity,
            "sampler": "integer-exact",
            "certificate": certificate.to_dict(),
        },
        [noise, ("granularity", granularity), ("sampler", "integer-exact")] + certificate_rows(certificate),
        record=provenance.CALCULATION,
    )
    return EXIT_OK


def _calibrate_discrete_gaussian(args: argparse.Namespace) -> int:
    result = calibrate_discrete_gaussian(
        args.epsilon, args.delta, sensitivity=args.sensitivity, compositions=args.compositions
    )
    emit(
        args,
        {"sigma": result.sigma, "sampler": "integer-exact", "certificate": result.certificate.to_dict()},
        [("sigma", result.sigma), ("sampler", "integer-exact")] + certificate_rows(result.certificate),
        record=provenance.CALCULATION,
    )
    return EXIT_OK


def calibrate_secure_gaussian(args: argparse.Namespace) -> int:
    """``calibrate gaussian --secure`` (:data:`dpcert.cli._commands.SECURE_GAUSSIAN`)."""
    return _calibrate_secure(args, "gaussian")


def _calibrate_laplace(args: argparse.Namespace) -> int:
    check_granularity(args)
    if args.secure:
        return _calibrate_secure(args, "laplace")
    result = calibrate_laplace(args.epsilon, sensitivity=args.sensitivity)
    emit(
        args,
        {"scale": result.scale, "certificate": result.certificate.to_dict()},
        [("scale", result.scale)] + certificate_rows(result.certificate),
        record=provenance.CALCULATION,
    )
    warn_float_sampler(args)
    return EXIT_OK


def _account_gaussian(args: argparse.Namespace) -> int:
    certificate = gaussian_certificate(
        args.sigma, delta=args.delta, sensitivity=args.sensitivity, compositions=args.compositions
    )
    emit(
        args,
        {"epsilon": certificate.epsilon, "delta": certificate.delta, "certificate": certificate.to_dict()},
        certificate_rows(certificate),
        record=provenance.CALCULATION,
    )
    plot_certificate(args, certificate)
    return EXIT_OK


def _account_laplace(args: argparse.Namespace) -> int:
    certificate = laplace_certificate(args.scale, sensitivity=args.sensitivity, delta=args.delta)
    emit(
        args,
        {"epsilon": certificate.epsilon, "delta": certificate.delta, "certificate": certificate.to_dict()},
        certificate_rows(certificate),
        record=provenance.CALCULATION,
    )
    plot_certificate(args, certificate)
    return EXIT_OK
