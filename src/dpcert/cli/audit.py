"""``dpcert audit TARGET --input A --neighbour B --epsilon E [--delta D] ...`` (contract: CLI.md).

TARGET is ``builtin:laplace``, ``builtin:gaussian``, ``builtin:randomized-response`` (each with its own
flags; by default the noise dpcert calibrates for the claim) or ``path/to/file.py:function`` where
``function(value, rng)`` returns one output (``function(value, rng, size)`` is used when present).
Exit status 1 on a "violated" verdict.

A file target is *executed* (imported as a module) after every other argument has been checked; the
function is then probed on a few draws before the audit starts: a wrong signature or a failing call
exits 2, and a function whose draws do not follow the generator dpcert passes (two calls with
identically seeded generators disagree) is reported, since its audit cannot be re-run from the seed.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from dpcert import _json
from dpcert import _validation as check
from dpcert.audits.classifier_search import ClassifierSearch
from dpcert.audits.floating_point import check_floating_point
from dpcert.audits.neighbours import RELATIONS, Relation
from dpcert.audits.run import audit, linf_hint
from dpcert.audits.sampling import accepts_size, check_draws_fit, draw
from dpcert.audits.search import CandidatePairs, ScalarSearch, VectorSearch
from dpcert.audits.selection import DEFAULT_MAX_CELLS
from dpcert.cli._common import (
    EXIT_OK,
    EXIT_VIOLATED,
    CommandGroups,
    bounded_integer,
    delta_value,
    dpcert_version,
    emit,
    integer,
    number,
    output_file,
    plot_file,
    positive,
)
from dpcert.cli._common import seed as seed_type
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.gaussian import calibrate_gaussian
from dpcert.mechanisms.laplace import LaplaceMechanism, calibrate_laplace, laplace_certificate
from dpcert.mechanisms.secure.noise import (
    SecureGaussianMechanism,
    SecureLaplaceMechanism,
    secure_gaussian,
    secure_laplace,
)
from dpcert.viz.plots import plot_audit

BUILTINS = ("laplace", "gaussian", "randomized-response")
MAX_SAMPLES = 10**12
PROBE_DRAWS = 64


def confidence(text: str) -> float:
    """argparse type: a confidence level ``0 < confidence < 1``."""
    value = number(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: allowed 0 < confidence < 1")
    return value


SEARCHES = ("vector", "scalar", "pairs", "classifier")


def register(groups: CommandGroups) -> None:
    parser = groups.add(None, "audit", _audit)
    parser.epilog = (
        "A TARGET path/to/file.py:function EXECUTES that Python file (it is imported, after the other "
        "arguments are checked): audit only code you trust."
    )
    parser.add_argument(
        "target",
        metavar="TARGET",
        help="builtin:laplace | builtin:gaussian | builtin:randomized-response | path/to/file.py:function "
        "(the file is executed)",
    )
    parser.add_argument(
        "--input",
        default=None,
        help="first input, a JSON literal (e.g. 0 or '[0, 1]'); with --search: the start",
    )
    parser.add_argument(
        "--neighbour", default=None, help="neighbouring input, a JSON literal (not with --search)"
    )
    parser.add_argument("--epsilon", type=positive, required=True, help="claimed epsilon")
    parser.add_argument("--delta", type=delta_value, default=0.0, help="claimed delta (default 0)")
    parser.add_argument(
        "--samples",
        type=bounded_integer(2, MAX_SAMPLES),
        default=100_000,
        help="draws per input (default 1e5; refused up front if they cannot fit in memory)",
    )
    parser.add_argument("--confidence", type=confidence, default=0.95, help="1 - alpha (default 0.95)")
    parser.add_argument(
        "--relation",
        choices=RELATIONS,
        default=None,
        help="the neighbour relation of the claim, of radius --sensitivity: linf (every answer moves by "
        "at most D), one-differ (one answer moves; histograms, sums), l1, add-remove (one record added "
        "or removed); a pair outside it is refused (default: linf for --search vector|scalar, the pair "
        "as given otherwise)",
    )
    parser.add_argument(
        "--max-cells",
        type=bounded_integer(1, 10**7),
        default=None,
        help=f"outputs with at most this many distinct values are audited as cells (default "
        f"{DEFAULT_MAX_CELLS})",
    )
    parser.add_argument("--seed", type=seed_type, default=None, help="random seed (default: fresh, reported)")
    parser.add_argument(
        "--floating-point",
        action="store_true",
        help="audit the lowest-set-bit statistic of the outputs (flags textbook floating-point noise)",
    )
    parser.add_argument(
        "--timing",
        nargs="?",
        const="wall",
        default=None,
        choices=("wall", "cpu"),
        help="audit the joint view (output, release time) of single releases timed one by one: wall "
        "clock (default; what an observer sees) or cpu (the thread's processor time, without the waits "
        "of a loaded machine); times are not reproducible from --seed",
    )
    parser.add_argument(
        "--save",
        type=output_file,
        default=None,
        help="write the full audit report (JSON, with target, claim, seed and options) here",
    )
    parser.add_argument(
        "--plot",
        type=plot_file,
        default=None,
        metavar="FILE.png",
        help="draw the two output distributions, the rejection set and the bound against the claim",
    )
    search = parser.add_argument_group("neighbour search (instead of --input/--neighbour)")
    search.add_argument(
        "--search",
        choices=SEARCHES,
        default=None,
        help="vector: query-answer vectors (--length, --sensitivity); scalar: scalar inputs; "
        "pairs: your own candidates (--pairs); classifier: the pairs of --pairs, else of --length "
        "(vector) or scalar inputs, screened by successive halving with an event learned by a classifier",
    )
    search.add_argument("--length", type=integer, default=None, help="vector search: number of query answers")
    search.add_argument(
        "--start",
        default=None,
        help="vector search: more starts, a JSON list of numbers (each the vector of all that number) or "
        "vectors, e.g. '[0, 5, 10]'; or 'threshold': T - D, T and T + D for the target's .threshold T",
    )
    search.add_argument(
        "--pairs",
        default=None,
        help="pairs search: a JSON list of [input, neighbour] pairs, or a path to a .json file holding one",
    )
    search.add_argument(
        "--workers",
        type=integer,
        default=None,
        help="classifier search: processes learning the events of a screening round, and drawing and "
        "counting the evaluation's chunks, side by side (default 1; the report does not depend on it)",
    )
    builtin = parser.add_argument_group("builtin targets")
    builtin.add_argument("--scale", type=positive, default=None, help="laplace: noise scale b")
    builtin.add_argument("--sigma", type=positive, default=None, help="gaussian: noise standard deviation")
    builtin.add_argument(
        "--sensitivity", type=positive, default=1.0, help="laplace/gaussian: sensitivity for default noise"
    )
    builtin.add_argument(
        "--secure",
        action="store_true",
        help="laplace/gaussian: integer-exact noise on a power-of-two grid (bits from the seeded generator)",
    )
    builtin.add_argument(
        "--granularity", type=number, default=None, help="--secure: grid step, a power of two"
    )
    builtin.add_argument(
        "--flip-probability",
        type=number,
        default=None,
        help="randomized-response: probability of reporting the other bit (default 1/(1+e^epsilon))",
    )


def parse_input(name: str, text: str) -> Any:
    """A JSON literal; lists become float arrays."""
    try:
        value = _json.loads(text, what=name)
    except _json.JSONFormatError as exc:
        hint = str(exc) if exc.key is not None else None  # a duplicate key, NaN or Infinity
        raise InvalidParameter(name, text, 'a JSON literal, e.g. 0, 1.5 or "[0, 1]"', hint) from None
    if isinstance(value, list):
        try:
            return np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise InvalidParameter(name, text, "a number or a flat list of numbers") from None
    return value


def parse_target(target: str) -> tuple[Path, str]:
    """``path/to/file.py:function`` -> (path, function name), checked without reading the file."""
    path_text, _, function_name = target.rpartition(":")
    path = Path(path_text)
    if not path_text or not function_name.isidentifier() or path.suffix != ".py":
        raise InvalidParameter(
            "TARGET", target, "builtin:" + "|builtin:".join(BUILTINS) + " or path/to/file.py:function"
        )
    if not path.is_file():
        raise InvalidParameter("TARGET", target, "an existing Python file before ':'")
    return path, function_name


def load_function(target: str) -> Callable[..., Any]:
    """``path/to/file.py:function`` -> the function.  This EXECUTES the file (imported under a private
    name); an exception while importing it is reported as bad input naming TARGET."""
    path, function_name = parse_target(target)
    spec = importlib.util.spec_from_file_location(f"dpcert_audit_target_{abs(hash(path.resolve()))}", path)
    if spec is None or spec.loader is None:
        raise InvalidParameter("TARGET", target, "a Python source file before ':' (path/to/file.py)")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.resolve().parent))
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's file failed, not dpcert
        detail = " ".join(f"{type(exc).__name__}: {exc}".split())
        raise InvalidParameter("TARGET", target, f"a Python file that imports cleanly ({detail})") from None
    finally:
        sys.path.pop(0)
    function = getattr(module, function_name, None)
    if not callable(function):
        raise InvalidParameter("TARGET", target, f"a function named {function_name!r} in {path}")
    check_signature(target, function)
    return function


def check_signature(target: str, function: Callable[..., Any]) -> None:
    """Refuse a function that cannot be called as ``f(value, rng)`` (or ``f(value, rng, size=n)``)."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # builtins without a signature: the probe decides
        return
    try:
        signature.bind(0, None)
    except TypeError:
        try:  # a required ``size`` is fine: batched targets are always called with it
            signature.bind(0, None, size=1)
            return
        except TypeError:
            pass
        raise InvalidParameter(
            "TARGET",
            target,
            f"a function f(value, rng) or f(value, rng, size); {function.__name__}{signature} is not",
        ) from None


def probe(
    target: str, mechanism: Callable[..., Any], value: Any, seed: int, samples: int, flag: str = "--input"
) -> tuple[int, bool]:
    """Draw a few outputs twice from identically seeded generators (never the audit's own).

    Returns the number of values per draw and whether the two probes agree, i.e. whether the draws
    follow the generator dpcert passes.  A call that fails or returns an unusable output is bad input:
    for a built-in target it names ``flag`` (the input it was given), for a file target the TARGET.
    """
    count = min(samples, PROBE_DRAWS)
    draws = []
    for _ in range(2):
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0xA0D17,)))
        try:
            draws.append(np.asarray(draw(mechanism, value, count, rng, name=flag)))
        except InvalidParameter as exc:
            if target.startswith("builtin:"):  # dpcert's own mechanism: the input is what is wrong
                inner = exc.__cause__ if isinstance(exc.__cause__, InvalidParameter) else exc
                raise InvalidParameter(flag, value, f"an input {target} can take: {inner.allowed}") from None
            if exc.name == flag:  # the file's function raised on this input
                raise InvalidParameter(
                    "TARGET", target, f"a mechanism that runs on {flag} ({exc.allowed})"
                ) from None
            raise InvalidParameter("TARGET", target, f"a mechanism with a usable output ({exc})") from None
        except Exception as exc:  # noqa: BLE001 - the audited code failed, not dpcert
            detail = " ".join(f"{type(exc).__name__}: {exc}".split())
            raise InvalidParameter("TARGET", target, f"a mechanism that runs on {flag} ({detail})") from None
    first, second = draws
    width = int(np.prod(first.shape[1:], dtype=np.int64)) if first.ndim > 1 else 1
    reproducible = first.shape == second.shape and bool(
        np.array_equal(first, second, equal_nan=first.dtype.kind in "fc")
    )
    return width, reproducible


def check_memory(samples: int, width: int, batched: bool) -> None:
    """Refuse ``--samples`` whose draws (both inputs) cannot fit in the memory available."""
    check_draws_fit(samples, width, batched=batched, name="--samples")


def _randomized_response(flip: float) -> Callable[..., Any]:
    def mechanism(bit: Any, rng: np.random.Generator, size: int) -> np.ndarray:
        return np.where(rng.random(size) < flip, 1 - bit, bit)

    return mechanism


def builtin_mechanism(name: str, args: argparse.Namespace, a: Any, b: Any) -> tuple[Callable[..., Any], dict]:
    """The built-in mechanism and the parameters it was given (defaults: calibrated for the claim)."""
    if getattr(args, "granularity", None) is not None and not getattr(args, "secure", False):
        raise InvalidParameter("--granularity", args.granularity, "only together with --secure")
    if getattr(args, "secure", False):
        if name not in ("laplace", "gaussian"):
            raise InvalidParameter("--secure", f"builtin:{name}", "builtin:laplace or builtin:gaussian")
        return _secure_builtin(name, args, int(np.size(a)))
    if name == "laplace":
        if args.scale is None:
            mechanism = calibrate_laplace(args.epsilon, sensitivity=args.sensitivity).mechanism()
        else:
            scale = check.positive_finite("scale", args.scale)
            mechanism = LaplaceMechanism(scale, laplace_certificate(scale, sensitivity=args.sensitivity))
        return mechanism, {"scale": mechanism.scale}
    if name == "gaussian":
        if args.sigma is None:
            sigma = calibrate_gaussian(args.epsilon, args.delta, sensitivity=args.sensitivity).sigma
        else:
            sigma = check.positive_finite("sigma", args.sigma)

        def gaussian(value: Any, rng: np.random.Generator, size: int) -> Any:
            array = check.finite_array("value", value)
            return array + rng.normal(0.0, sigma, (size,) + array.shape)

        return gaussian, {"sigma": sigma}
    if name == "randomized-response":
        for label, value in (("--input", a), ("--neighbour", b)):
            if value not in (0, 1) or isinstance(value, bool):
                raise InvalidParameter(label, value, "0 or 1 for builtin:randomized-response")
        if args.flip_probability is None:
            flip = 1.0 / (1.0 + math.exp(check.epsilon(args.epsilon)))
        else:
            flip = check.probability("flip-probability", args.flip_probability)
        return _randomized_response(flip), {"flip_probability": flip}
    raise InvalidParameter("TARGET", f"builtin:{name}", "builtin:" + "|builtin:".join(BUILTINS))


def _secure_builtin(name: str, args: argparse.Namespace, dimension: int) -> tuple[Callable[..., Any], dict]:
    """The integer-exact grid mechanism for builtin:laplace|gaussian --secure (reproducible bits)."""
    mechanism: SecureLaplaceMechanism | SecureGaussianMechanism
    if name == "laplace":
        epsilon = args.epsilon if args.scale is None else None
        mechanism = secure_laplace(
            epsilon,
            scale=args.scale,
            sensitivity=args.sensitivity,
            dimension=dimension,
            granularity=args.granularity,
            bits="rng",
        )
        noise = {"scale": mechanism.scale}
    else:
        delta = args.delta if args.delta > 0 or args.sigma is None else None
        gaussian = secure_gaussian(
            args.epsilon,
            delta,
            sigma=args.sigma,
            sensitivity=args.sensitivity,
            granularity=args.granularity,
            bits="rng",
        )
        mechanism, noise = gaussian, {"sigma": gaussian.real_sigma}
    return mechanism, noise | {
        "granularity": mechanism.grid.granularity,
        "sampler": "integer-exact",
        "certificate": mechanism.certificate.to_dict(),
    }


def fresh_seed() -> int:
    """A seed from the operating system's entropy, below 2**63, for an audit run without ``--seed``."""
    entropy = np.random.SeedSequence().entropy  # an int drawn from the OS when no entropy is given
    assert isinstance(entropy, int)
    return entropy % 2**63


def _pairs(text: str) -> list:
    """``--pairs``: a JSON list of [input, neighbour] pairs, inline or in a .json file."""
    path = Path(text)
    if text.endswith(".json"):
        if not path.is_file():
            raise InvalidParameter("--pairs", text, "an existing .json file or a JSON list of pairs")
        text = path.read_text()
    try:
        pairs = _json.loads(text, what="--pairs")
    except _json.JSONFormatError as exc:
        hint = str(exc) if exc.key is not None else None  # a duplicate key, NaN or Infinity
        raise InvalidParameter("--pairs", text, "a JSON list of [input, neighbour] pairs", hint) from None
    if not isinstance(pairs, list) or not pairs or any(not isinstance(p, list) or len(p) != 2 for p in pairs):
        raise InvalidParameter("--pairs", text, "a non-empty JSON list of [input, neighbour] pairs")
    return [tuple(np.asarray(v, dtype=float) if isinstance(v, list) else v for v in pair) for pair in pairs]


def _starts(text: str) -> tuple[tuple, bool]:
    """``--start``: (extra starts, whether to add starts around the target's threshold)."""
    if text == "threshold":
        return (), True
    try:
        value = _json.loads(text, what="--start")
    except _json.JSONFormatError as exc:
        hint = str(exc) if exc.key is not None else None
        raise InvalidParameter(
            "--start", text, "a JSON list of numbers or vectors, or 'threshold'", hint
        ) from None
    if not isinstance(value, list) or not value:
        raise InvalidParameter("--start", text, "a non-empty JSON list of numbers or vectors, or 'threshold'")
    return tuple(np.asarray(v, dtype=float) if isinstance(v, list) else v for v in value), False


def _flag_names(exc: InvalidParameter) -> InvalidParameter:
    """The error of a search's parameter, named by the command-line flag that set it."""
    if exc.name.startswith("pairs["):
        return InvalidParameter("--pairs", f"{exc.name}: {exc.value}", exc.allowed, exc.hint)
    if exc.name.startswith("starts"):
        return InvalidParameter("--start", exc.value, exc.allowed, exc.hint)
    if exc.name in ("relation", "sensitivity", "length", "workers"):
        return InvalidParameter(f"--{exc.name}", exc.value, exc.allowed, exc.hint)
    if exc.name == "start":
        return InvalidParameter("--input", exc.value, exc.allowed, exc.hint)
    return exc


def search_from_arguments(args: argparse.Namespace) -> Any:
    """The neighbour search named by ``--search`` (``--input`` is its start), or None."""
    if args.workers is not None and args.search != "classifier":
        raise InvalidParameter("--workers", args.workers, "only with --search classifier")
    if args.search is None:
        for flag, value in (("--length", args.length), ("--pairs", args.pairs), ("--start", args.start)):
            if value is not None:
                raise InvalidParameter(flag, value, "only with --search")
        return None
    if args.neighbour is not None:
        raise InvalidParameter("--neighbour", args.neighbour, "omitted with --search (the search chooses it)")
    if args.start is not None and args.search not in ("vector", "classifier"):
        raise InvalidParameter("--start", args.start, "only with --search vector or classifier")
    start = None if args.input is None else parse_input("--input", args.input)
    try:
        return _search(args, start)
    except InvalidParameter as exc:
        raise _flag_names(exc) from None


def _search(args: argparse.Namespace, start: Any) -> Any:
    if args.search == "classifier":  # its pairs: --pairs, else vector (--length), else scalar inputs
        inner = argparse.Namespace(**vars(args))
        inner.search = (
            "pairs" if args.pairs is not None else "vector" if args.length is not None else "scalar"
        )
        if args.start is not None and inner.search != "vector":
            raise InvalidParameter("--start", args.start, "with --search classifier only with --length")
        workers = 1 if args.workers is None else args.workers
        return ClassifierSearch(_search(inner, start), workers=workers)
    if args.search == "vector":
        if args.length is None:
            raise InvalidParameter("--length", None, "the number of query answers (an integer >= 1)")
        starts, around = ((), False) if args.start is None else _starts(args.start)
        return VectorSearch(
            args.length,
            args.sensitivity,
            start=start,
            relation=args.relation or "linf",
            starts=starts,
            around_threshold=around,
        )
    if args.length is not None:
        raise InvalidParameter("--length", args.length, "only with --search vector")
    if args.search == "scalar":
        return ScalarSearch(
            args.sensitivity, start=0.0 if start is None else start, relation=args.relation or "linf"
        )
    if args.pairs is None:
        raise InvalidParameter("--pairs", None, "a JSON list of [input, neighbour] pairs for --search pairs")
    return CandidatePairs(tuple(_pairs(args.pairs)), relation=args.relation, sensitivity=args.sensitivity)


def _audit(args: argparse.Namespace) -> int:
    if args.timing and args.floating_point:
        raise InvalidParameter("--timing", args.timing, "not combined with --floating-point")
    search = search_from_arguments(args)
    if search is not None:
        return _audit_search(args, search)
    for flag, value in (("--input", args.input), ("--neighbour", args.neighbour)):
        if value is None:
            raise InvalidParameter(flag, None, "a JSON literal (required unless --search is given)")
    a = parse_input("--input", args.input)
    b = parse_input("--neighbour", args.neighbour)
    relation = None if args.relation is None else Relation(args.relation, args.sensitivity)
    if relation is not None:
        relation.check_pair("--neighbour", a, b)
    if args.max_cells is not None and args.floating_point:
        raise InvalidParameter("--max-cells", args.max_cells, "not combined with --floating-point")
    check_memory(args.samples, 1, batched=True)  # the least any target needs: before importing a file
    seed = args.seed if args.seed is not None else fresh_seed()
    if args.target.startswith("builtin:"):
        mechanism, parameters = builtin_mechanism(args.target.removeprefix("builtin:"), args, a, b)
    elif args.secure:
        raise InvalidParameter("--secure", args.target, "builtin:laplace or builtin:gaussian")
    else:
        parse_target(args.target)
        mechanism, parameters = load_function(args.target), {}
    width, reproducible = probe(args.target, mechanism, a, seed, args.samples)
    probe(args.target, mechanism, b, seed, args.samples, "--neighbour")
    check_memory(args.samples, width, batched=accepts_size(mechanism))
    warnings = []
    if not reproducible:
        warnings.append(
            "the target ignores the generator dpcert passes (two calls with identically seeded generators "
            f"gave different outputs): its draws are not reproducible from --seed {seed}"
        )
    for warning in warnings:
        sys.stderr.write(f"dpcert: warning: {warning}\n")
    claim = (mechanism, a, b, args.epsilon, args.delta)
    options = {"samples": args.samples, "seed": seed, "confidence": args.confidence}
    if args.floating_point:
        result = check_floating_point(*claim, **options)
        report = result.audit
        extra = {"floating_point": {k: v for k, v in result.to_dict().items() if k != "audit"}}
    else:
        progress = not args.json and sys.stderr.isatty() and args.samples >= 1_000_000
        timing = False if args.timing is None else args.timing
        report = audit(
            *claim,
            **options,
            progress=progress and not timing,
            timing=timing,
            relation=relation,
            max_cells=DEFAULT_MAX_CELLS if args.max_cells is None else args.max_cells,
        )
        extra = {}
    run = {
        "target": args.target,
        "input": args.input,
        "neighbour": args.neighbour,
        "claim": {"epsilon": args.epsilon, "delta": args.delta},
        "seed": seed,
        "samples": args.samples,
        "confidence": args.confidence,
        "options": {
            "floating_point": args.floating_point,
            "timing": args.timing,
            "relation": args.relation,
            "sensitivity": args.sensitivity,
            "max_cells": args.max_cells,
            **parameters,
        },
        "reproducible_from_seed": reproducible,
        "warnings": warnings,
        "dpcert_version": dpcert_version(),
    }
    payload = report.to_dict() | {"target": args.target, "seed": seed, "parameters": parameters, "run": run}
    payload |= extra
    if args.plot is not None:
        _plot_audit(report, mechanism, a, b, seed, args.plot)
        payload["plot"] = str(args.plot)
    if args.save is not None:
        args.save.write_text(json.dumps(report.to_dict() | {"run": run} | extra, indent=2, allow_nan=False))
    emit(args, payload, _report_rows(report, seed, [("samples per input", report.samples)]))
    return EXIT_VIOLATED if report.violated else EXIT_OK


def _report_rows(report: Any, seed: int, middle: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The table of an audit: verdict, bound (or that no informative event was found), claim, the
    neighbour relation, confidence, ``middle``, set and its counts, ceiling, method, seed."""
    finding = (
        [("epsilon lower bound", report.epsilon_lower_bound)]
        if report.informative
        else [("finding", "no informative event found (epsilon lower bound 0)")]
    )
    hint = linf_hint(report)
    return [
        ("verdict", report.verdict),
        *finding,
        ("claim", f"epsilon={report.claim.epsilon:g}, delta={report.claim.delta:g}"),
        ("neighbours", report.neighbours()),
        ("confidence", report.confidence),
        *middle,
        ("rejection set", report.rejection_set.describe()),
        ("counts", report.counts_text()),
        ("largest bound these draws could show", report.ceiling_text()),
        ("method", report.method),
        ("seed", seed),
    ] + ([] if hint is None else [("note", hint)])


PLOT_DRAWS = 50_000


def _plot_audit(report: Any, mechanism: Any, a: Any, b: Any, seed: int, path: Path) -> None:
    """Fresh draws (a stream of the run's seed the audit did not use) pictured with the report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng([seed, 7])
    plot_audit(report, draw(mechanism, a, PLOT_DRAWS, rng), draw(mechanism, b, PLOT_DRAWS, rng), path)


def _audit_search(args: argparse.Namespace, search: Any) -> int:
    """``--search``: screen candidate pairs, audit the best on fresh draws, name the pair found."""
    if args.floating_point:
        raise InvalidParameter("--floating-point", True, "not combined with --search")
    if args.secure:
        raise InvalidParameter("--secure", True, "not combined with --search")
    if args.timing:
        raise InvalidParameter("--timing", args.timing, "not combined with --search")
    check_memory(args.samples, 1, batched=True)  # before importing a file target
    if args.target.startswith("builtin:"):
        probe = search.candidates(np.random.default_rng(0))[0]
        mechanism, parameters = builtin_mechanism(
            args.target.removeprefix("builtin:"), args, probe.a, probe.b
        )
    else:
        mechanism, parameters = load_function(args.target), {}
    seed = args.seed if args.seed is not None else fresh_seed()
    if seed < 0:
        raise InvalidParameter("--seed", seed, "an integer >= 0")
    report = audit(
        mechanism,
        epsilon=args.epsilon,
        delta=args.delta,
        samples=args.samples,
        seed=seed,
        confidence=args.confidence,
        search=search,
        max_cells=DEFAULT_MAX_CELLS if args.max_cells is None else args.max_cells,
    )
    if args.save is not None:
        args.save.write_text(report.to_json(indent=2))
    found = report.search
    assert found is not None  # an audit with a search reports it
    pair = found["pair"]
    payload = report.to_dict() | {
        "target": args.target,
        "seed": seed,
        "parameters": parameters,
        "input": pair["input"],
        "neighbour": pair["neighbour"],
    }
    middle = [
        ("pair found", f"{pair['input']} vs {pair['neighbour']} ({pair['pattern']})"),
        ("candidates screened", found["candidates"]),
        ("samples per input (final pair)", report.samples),
    ]
    emit(args, payload, _report_rows(report, seed, middle))
    return EXIT_VIOLATED if report.violated else EXIT_OK
