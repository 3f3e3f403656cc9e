"""``dpcert calibrate binomial-sum|shuffle`` and ``dpcert account binomial-sum|shuffle``."""

from __future__ import annotations

import argparse

from dpcert.accounting import amplification
from dpcert.cli._common import EXIT_OK, CommandGroups, certificate_rows, emit, integer, number
from dpcert.mechanisms.binomial_sum import (
    METHODS,
    NORMS,
    SHAPES,
    BitSumParameters,
    binomial_sum_certificate,
    calibrate_binomial_sum,
)


def register(groups: CommandGroups) -> None:
    parser = groups.add(
        "calibrate",
        "binomial-sum",
        "bit-sum shuffle protocol (g, b, p) for a sum of N users' vectors at (epsilon, delta)",
        _calibrate_binomial_sum,
    )
    parser.add_argument("--epsilon", type=number, required=True)
    parser.add_argument("--delta", type=number, required=True)
    parser.add_argument("--users", type=integer, required=True, help="number N of users in one sum")
    parser.add_argument("--dimension", type=integer, default=1, help="d (default 1: scalars)")
    parser.add_argument("--bound", type=number, default=1.0, help="every entry lies in [-B, B] (default 1)")
    parser.add_argument("--method", choices=METHODS, default="exact")
    parser.add_argument("--shape", choices=SHAPES, default="vector", help="default vector")
    parser.add_argument(
        "--norm", choices=NORMS, default="entry", help="entry: entries in [-B, B]; l2: l2 norm <= B (tighter)"
    )

    parser = groups.add(
        "calibrate",
        "shuffle",
        "largest local epsilon0 whose shuffled protocol meets (epsilon, delta)",
        _calibrate_shuffle,
    )
    parser.add_argument("--epsilon", type=number, required=True)
    parser.add_argument("--delta", type=number, required=True)
    parser.add_argument("--users", type=integer, required=True)
    parser.add_argument("--method", choices=amplification.METHODS, default="numeric")
    _add_randomizer_arguments(parser)

    parser = groups.add(
        "account", "binomial-sum", "epsilon of a bit-sum shuffle protocol at delta", _account_binomial_sum
    )
    parser.add_argument("--g", type=integer, required=True, help="precision (encoded values in 0..g)")
    parser.add_argument("--b", type=integer, required=True, help="noise bits per user and coordinate")
    parser.add_argument("--p", type=number, required=True, help="probability of a noise bit being 1")
    parser.add_argument("--users", type=integer, required=True)
    parser.add_argument("--delta", type=number, required=True)
    parser.add_argument("--dimension", type=integer, default=1)
    parser.add_argument("--bound", type=number, default=1.0)
    parser.add_argument("--shape", choices=SHAPES, default="vector")
    parser.add_argument("--norm", choices=NORMS, default="entry")

    parser = groups.add(
        "account", "shuffle", "epsilon of N shuffled epsilon0-LDP reports at delta", _account_shuffle
    )
    parser.add_argument("--epsilon0", type=number, required=True)
    parser.add_argument("--users", type=integer, required=True)
    parser.add_argument("--delta", type=number, required=True)
    parser.add_argument("--method", choices=amplification.METHODS, default="numeric")
    _add_randomizer_arguments(parser)


def _add_randomizer_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--randomizer",
        choices=amplification.RANDOMIZERS,
        default="generic",
        help="generic: any epsilon0-LDP randomizer (default); binary-rr: exact for small N, else the "
        "stronger clone bound; k-rr: the stronger clone bound (needs --categories)",
    )
    parser.add_argument("--categories", type=integer, default=None, help="k of k-rr (k >= 2)")


def _randomizer_options(args: argparse.Namespace) -> dict:
    if args.randomizer == "generic":
        return {}
    return {"randomizer": args.randomizer, "categories": args.categories}


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
    emit(args, payload, rows + certificate_rows(result.certificate, neighbouring=False))
    return EXIT_OK


def _calibrate_shuffle(args: argparse.Namespace) -> int:
    options = _randomizer_options(args)
    epsilon0 = amplification.largest_local_epsilon(
        args.epsilon, args.delta, args.users, args.method, **options
    )
    certificate = amplification.amplification_certificate(
        epsilon0, args.users, epsilon=args.epsilon, delta=args.delta, method=args.method, **options
    )
    emit(
        args,
        {"epsilon0": epsilon0, "method": args.method, "certificate": certificate.to_dict()},
        [("epsilon0", epsilon0), ("method", args.method)] + certificate_rows(certificate, neighbouring=False),
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
    )
    return EXIT_OK


def _account_shuffle(args: argparse.Namespace) -> int:
    certificate = amplification.amplification_certificate(
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
    emit(args, payload, rows)
    return EXIT_OK
