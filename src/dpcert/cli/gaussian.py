"""``dpcert calibrate gaussian``: the least Gaussian σ for (ε, δ), and the options of noise samplers.

This module imports only the Gaussian profile and its certificates
(:mod:`dpcert.mechanisms.gaussian_profile`), so the command starts without the integer-exact samplers,
the discrete mechanisms or the DP-SGD
accountant.  ``--secure`` calibrates the integer-exact mechanism on a grid instead; its handler
(:data:`dpcert.cli._commands.SECURE_GAUSSIAN`, in :mod:`dpcert.cli.noise`) is loaded only then.
Without ``--secure`` the certificate is backed by a floating-point sampler and a one-line warning is
printed on stderr unless ``--research`` says the noise is for research use.
"""

from __future__ import annotations

import argparse
import sys

from dpcert import provenance
from dpcert.cli._commands import SECURE_GAUSSIAN, load_handler
from dpcert.cli._common import (
    EXIT_OK,
    ONE_OF,
    CommandGroups,
    certificate_rows,
    delta_value,
    emit,
    integer,
    positive,
)
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.gaussian_profile import GAUSSIAN_METHODS, calibrate_gaussian_noise


def register(groups: CommandGroups) -> None:
    parser = groups.add("calibrate", "gaussian", _calibrate_gaussian)
    parser.add_argument("--epsilon", type=positive, required=True)
    parser.add_argument("--delta", type=delta_value, required=True)
    parser.add_argument("--sensitivity", type=positive, default=1.0, help="l2-sensitivity (default 1)")
    parser.add_argument(
        "--compositions", type=integer, default=1, help="number of releases with this sigma (default 1)"
    )
    parser.add_argument("--method", choices=GAUSSIAN_METHODS, default="analytic", **ONE_OF)
    add_sampler_options(parser)


def add_sampler_options(parser: argparse.ArgumentParser) -> None:
    """``--secure``, ``--granularity`` and ``--research`` of a calibration with a real-valued sampler."""
    parser.add_argument(
        "--secure",
        action="store_true",
        help="integer-exact noise on a power-of-two grid (the certificate accounts for the rounding)",
    )
    parser.add_argument(
        "--granularity", type=positive, default=None, help="--secure: grid step, a power of two"
    )
    parser.add_argument(
        "--research", action="store_true", help="the noise is for research use: no floating-point warning"
    )


def warn_float_sampler(args: argparse.Namespace) -> None:
    """One line on stderr when a floating-point sampler backs the certificate outside research use."""
    if not getattr(args, "research", False):
        sys.stderr.write(
            "dpcert: warning: this certificate is backed by a floating-point sampler whose low-order bits "
            "leak (Mironov 2012); use --secure for deployment or --research to silence\n"
        )


def check_granularity(args: argparse.Namespace) -> None:
    """``--granularity`` only together with ``--secure``."""
    if args.granularity is not None and not args.secure:
        raise InvalidParameter("--granularity", args.granularity, "only together with --secure")


def _calibrate_gaussian(args: argparse.Namespace) -> int:
    check_granularity(args)
    if args.secure:
        return load_handler(SECURE_GAUSSIAN)(args)
    result = calibrate_gaussian_noise(
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
        record=provenance.CALCULATION,
    )
    warn_float_sampler(args)
    return EXIT_OK
