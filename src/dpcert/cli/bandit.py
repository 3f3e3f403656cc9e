"""``dpcert bandit run|list`` and ``dpcert reproduce`` (CLI.md, "Run bandits with certified accounting").

Both are driven by :mod:`dpcert.bandits.registry`: algorithms and figure reproductions register
themselves there, so this module knows no algorithm by name.
"""

from __future__ import annotations

import argparse
import inspect
import sys
from pathlib import Path
from typing import Any

from dpcert import _json, provenance
from dpcert import _validation as check
from dpcert.bandits import registry
from dpcert.bandits.experiment import plot_regret, save_results, summary
from dpcert.bandits.privatizers import (
    CALIBRATION_LABELS,
    PRIVACY_MODELS,
    calibration_from_label,
    trust_model_of,
)
from dpcert.bandits.scheduler import check_scheduler, require_distributed
from dpcert.cli._common import (
    EXIT_BAD_INPUT,
    EXIT_OK,
    CommandGroups,
    available_memory,
    bounded_integer,
    delta_value,
    emit,
    gib,
    input_file,
    ledger_output,
    output_directory,
    plot_file,
    positive,
    seed,
)
from dpcert.errors import InvalidParameter
from dpcert.reproductions import (
    charisopoulos_2023,
    chowdhury_zhou_2022,
    current_name,
    improved_ldp_linear,
    li_zhou_ji_2022,
    tenenbaum_2021,
)
from dpcert.reproductions.chowdhury_zhou_2022 import FIGURES
from dpcert.reproductions.sweep import reproduce

MAX_RUNS = 100_000
MAX_HORIZON = 10**10
REPRODUCE_MAX_HORIZON = 20_000  # reproduce --horizon: at most the paper's T (Chowdhury & Zhou 2022, Figure 1)
BYTES_PER_ROUND = 8 * 4
"""Bytes held per round of each run: the float64 regret curve, its cumulative sum and per-run copies
made by the engines and by saving."""
MEMORY_FRACTION = 0.5
REPRODUCE_BASE_BYTES = 1.5 * 2**30
"""Memory of a reproduction besides its runs' arrays: the interpreter, NumPy, SciPy, Matplotlib and the
figures (measured peaks at small sizes: 0.09 to 0.7 GiB in all, e.g. chowdhury-zhou-2022-fig1 --horizon
2000: 0.62 GiB at --runs 20)."""
REPRODUCE_BYTES_PER_ROUND = 8 * 16
"""Bytes per run and round of each curve a reproduction holds: 16 float64 values (the curve, its realised
regret, per-run copies before they are stacked, the engine's per-round arrays).  Measured growth per run
and round of the curves held: li-zhou-ji-2022-fig2b (2 curves, T = 10^6) 10.8 float64 values per curve
between --runs 8 and 16; chowdhury-zhou-2022-fig1 (5 curves, T = 2000) 1.3 between --runs 20 and 200;
improved-ldp-linear-fig1 (8 curves, T = 2000) 2.4."""
TENENBAUM_ROUNDS_PER_RUN = 1 / 100
"""Rounds per run charged for tenenbaum-2021-mab, as a fraction of its horizon: its engines keep per-arm
counts and curves at checkpoints, not per-round arrays (measured: 148 248 KiB at --runs 5 and 150 080 KiB
at --runs 40, --option horizon=100000)."""
SCHEDULER_HELP = (
    "where the repetitions run: local (default: this process or its pool), dask (a Dask LocalCluster "
    "on this machine) or tcp://HOST:PORT (an existing Dask scheduler); needs dpcert[distributed]"
)


def register(groups: CommandGroups) -> None:
    parser = groups.add("bandit", "run", _run)
    parser.add_argument("algorithm", help="algorithm name (see `dpcert bandit list`)")
    parser.add_argument("--privacy", choices=PRIVACY_MODELS, default="none")
    parser.add_argument("--epsilon", type=positive, default=None)
    parser.add_argument("--delta", type=delta_value, default=None)
    parser.add_argument(
        "--horizon", type=bounded_integer(1, MAX_HORIZON), default=10_000, help="rounds T (default 10000)"
    )
    parser.add_argument(
        "--runs", type=bounded_integer(1, MAX_RUNS), default=1, help="repetitions R (default 1)"
    )
    parser.add_argument("--seed", type=seed, default=0)
    parser.add_argument(
        "--ledger",
        type=ledger_output,
        default=None,
        metavar="FILE.db|URL",
        help="charge this ledger (a SQLite file or a postgresql:// URL)",
    )
    parser.add_argument(
        "--signing-key",
        type=input_file,
        default=None,
        metavar="KEY.pem",
        help="with --ledger: the operator's Ed25519 private key (dpcert keygen); a ledger created with a "
        "key is signed on every write and written only with that key",
    )
    parser.add_argument("--plot", type=plot_file, default=None, metavar="FILE.png")
    parser.add_argument(
        "--out", type=output_directory, default=None, metavar="DIR", help="save JSON + NPZ here"
    )
    parser.add_argument(
        "--calibration",
        choices=tuple(CALIBRATION_LABELS),
        default="tight",
        help="noise calibration: least noise by exact accounting (tight) or the paper's formulas",
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="algorithm-specific setting (VALUE read as JSON if possible), repeatable",
    )
    parser.add_argument("--scheduler", type=scheduler_value, default="local", help=SCHEDULER_HELP)
    parser.add_argument(
        "--secure",
        action="store_true",
        help="integer-exact noise where the algorithm supports it (dp-dpe, dpe-fixedu, dp-pe with "
        "central or local privacy; mab-se with central; robust-elimination, linucb-ldp, ldp-linear, "
        "ldp-linear-combiner with local; "
        "linucb-jdp with central; linucb-sdp-amp with shuffle; same as --option "
        "secure=true); refused elsewhere, naming why",
    )

    groups.add("bandit", "list", _list)

    parser = groups.add(None, "reproduce", _reproduce)
    parser.add_argument("name", nargs="?", help="reproduction name")
    parser.add_argument("--list", action="store_true", help="list the available reproductions")
    parser.add_argument(
        "--runs", type=bounded_integer(1, MAX_RUNS), default=None, help="repetitions (default: the paper's)"
    )
    parser.add_argument("--out", type=output_directory, default="dpcert-reproduce", metavar="DIR")
    parser.add_argument("--seed", type=seed, default=0)
    parser.add_argument("--scheduler", type=scheduler_value, default="local", help=SCHEDULER_HELP)
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting the reproduction reads (e.g. horizon=2000; VALUE read as JSON), repeatable",
    )
    parser.add_argument(
        "--horizon",
        type=bounded_integer(1, REPRODUCE_MAX_HORIZON),
        default=None,
        metavar="T",
        help="a horizon up to the paper's T = 20000 (" + ", ".join(FIGURES) + " only)",
    )


def scheduler_value(text: str) -> str:
    """argparse type: ``local``, ``dask`` or ``tcp://HOST:PORT`` (port 1..65535)."""
    try:
        return str(check_scheduler(text, "--scheduler"))
    except InvalidParameter:
        raise argparse.ArgumentTypeError(
            f"invalid value {text!r}: allowed local, dask or tcp://HOST:PORT with a port in 1..65535"
        ) from None


def plumb_scheduler(args: argparse.Namespace, spec: Any, options: dict[str, Any]) -> None:
    """Pass a non-local ``--scheduler`` to an algorithm that runs its repetitions one by one."""
    if args.scheduler == "local":
        return
    require_distributed(args.scheduler)
    if args.ledger is not None:
        raise InvalidParameter(
            "--scheduler", args.scheduler, "local with --ledger (charged from this process)"
        )
    if not spec.distributable:
        raise InvalidParameter(
            "--scheduler", args.scheduler, f"local for {args.algorithm} (its runs are vectorised in one pass)"
        )
    options.setdefault("scheduler", args.scheduler)


def parse_options(pairs: list[str]) -> dict[str, Any]:
    """``["alpha=0.5", "width=exact"]`` → ``{"alpha": 0.5, "width": "exact"}``."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise InvalidParameter("option", pair, "KEY=VALUE")
        try:
            options[key] = _json.loads(text, what=f"option {key}")
        except _json.JSONFormatError as exc:
            if exc.key is not None:  # valid JSON but ambiguous: a duplicate key, NaN or Infinity
                raise InvalidParameter("option", pair, "KEY=VALUE with unambiguous JSON", str(exc)) from None
            options[key] = text
    return options


def check_options(options: dict[str, Any], allowed: frozenset[str] | None, algorithm: str) -> None:
    """Refuse ``--option`` keys the algorithm does not read (``allowed=None``: it checks them itself)."""
    if allowed is None:
        return
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise InvalidParameter(
            "--option", unknown[0], f"a key {algorithm} reads: " + ", ".join(sorted(allowed))
        )


def check_run_memory(runs: int, horizon: int) -> None:
    """Refuse ``runs x horizon`` regret curves that cannot fit in the memory available."""
    budget = available_memory() * MEMORY_FRACTION
    needed = float(runs) * horizon * BYTES_PER_ROUND
    if needed > budget:
        largest = int(budget // (horizon * BYTES_PER_ROUND))
        if largest < 1:
            raise InvalidParameter(
                "--horizon",
                horizon,
                f"horizon <= {int(budget // BYTES_PER_ROUND):.3g} on this machine ({BYTES_PER_ROUND} bytes "
                f"per round and run; {gib(budget)} of memory may be used)",
            )
        raise InvalidParameter(
            "--runs",
            runs,
            f"runs <= {largest} at --horizon {horizon} on this machine ({BYTES_PER_ROUND} bytes per round "
            f"and run: {gib(needed)} needed, {gib(budget)} of memory may be used)",
        )


def reproduction_memory(name: str, horizon: int | None, options: dict[str, Any]) -> tuple[int, int, int]:
    """(default runs, rounds of curves per run held at once, float64 values one run works on) of
    reproduction ``name`` at its settings."""
    if name in chowdhury_zhou_2022.FIGURES:
        return chowdhury_zhou_2022.memory_sizes(name, horizon)
    if name in li_zhou_ji_2022.HELD_CURVES:
        return li_zhou_ji_2022.memory_sizes(name)
    if name.startswith("charisopoulos-2023-"):
        return charisopoulos_2023.memory_sizes(name, options)
    if name.startswith("improved-ldp-linear-"):
        return improved_ldp_linear.memory_sizes(name, options.get("horizon", improved_ldp_linear.HORIZON))
    if name == tenenbaum_2021.NAME:
        rounds = check_positive_option("horizon", options.get("horizon") or tenenbaum_2021.HORIZON)
        return tenenbaum_2021.RUNS, max(1, int(rounds * TENENBAUM_ROUNDS_PER_RUN)), 0
    raise InvalidParameter("name", name, "a reproduction of `dpcert reproduce --list`")  # registered, unsized


def check_positive_option(key: str, value: object) -> int:
    """An ``--option KEY=VALUE`` that must be a positive integer."""
    try:
        return check.positive_int(key, value)
    except InvalidParameter:
        raise InvalidParameter("--option", f"{key}={value!r}", f"{key} a positive integer") from None


def reproduction_peak_bytes(runs: int, rounds: int, working: int = 0) -> float:
    """Upper bound on the peak memory of a reproduction of ``runs`` runs holding ``rounds`` rounds of
    curves per run, one run working on ``working`` float64 values: :data:`REPRODUCE_BASE_BYTES` +
    8 x working + runs x rounds x :data:`REPRODUCE_BYTES_PER_ROUND`."""
    return REPRODUCE_BASE_BYTES + 8.0 * working + float(runs) * rounds * REPRODUCE_BYTES_PER_ROUND


def check_reproduce_memory(name: str, runs: int | None, horizon: int | None, options: dict[str, Any]) -> None:
    """Refuse ``--runs`` whose estimated peak (:func:`reproduction_peak_bytes`) exceeds the memory left."""
    default_runs, rounds, working = reproduction_memory(name, horizon, options)
    runs = default_runs if runs is None else runs
    budget = available_memory() * MEMORY_FRACTION
    needed = reproduction_peak_bytes(runs, rounds, working)
    if needed <= budget:
        return
    fixed = reproduction_peak_bytes(0, rounds, working)
    largest = int((budget - fixed) // (rounds * REPRODUCE_BYTES_PER_ROUND))
    sizes = sorted(key for key in options if key in ("horizon", "horizons"))
    if largest < 1 and (sizes or horizon is not None):  # the horizon given is too long for even one run
        raise InvalidParameter(
            "--horizon" if horizon is not None else "--option",
            horizon if horizon is not None else f"{sizes[0]}={options[sizes[0]]!r}",
            f"a horizon of which one run of {name} fits in the {gib(budget)} of memory that may be used "
            f"({gib(reproduction_peak_bytes(1, rounds, working))} needed)",
        )
    shown = f"runs <= {largest}" if largest >= 1 else "none: not even one run fits"
    raise InvalidParameter(
        "--runs",
        runs,
        f"{shown} for {name} on this machine ({gib(needed)} needed at --runs {runs}: {gib(fixed)} + "
        f"{rounds:,} rounds x {REPRODUCE_BYTES_PER_ROUND} bytes per run; {gib(budget)} of memory may be "
        "used)",
    )


def _ledger_view(run: Any, ledger: Path | None) -> list[tuple[str, Any]]:
    """The δ the run's ε is stated at and, with a ledger, the ``ledger show`` command that states its
    users' ε at that same δ (by default ``ledger show`` uses the budget's δ, or the sum of the charges')."""
    if run.target is None:
        return []
    rows: list[tuple[str, Any]] = [("at delta", run.target.delta)]
    if ledger is not None:
        rows.append(("same view", f"dpcert ledger show --delta {run.target.delta:g} {ledger}"))
    return rows


def _run(args: argparse.Namespace) -> int:
    check_run_memory(args.runs, args.horizon)
    options = parse_options(args.option)
    if args.secure:
        options["secure"] = True

    clock = provenance.Clock()

    spec = registry.algorithm(args.algorithm)
    if args.privacy not in spec.privacy_models:
        raise InvalidParameter("privacy", args.privacy, "one of " + ", ".join(spec.privacy_models))
    check_options(options, getattr(spec, "options", None), args.algorithm)
    plumb_scheduler(args, spec, options)
    if args.signing_key is not None and args.ledger is None:
        raise InvalidParameter(
            "--signing-key", str(args.signing_key), "only with --ledger (it signs the ledger)"
        )
    config = registry.RunConfig(
        algorithm=args.algorithm,
        privacy=trust_model_of(args.privacy, "--privacy"),
        epsilon=args.epsilon,
        delta=args.delta,
        horizon=args.horizon,
        runs=args.runs,
        seed=args.seed,
        calibration=calibration_from_label(args.calibration, "--calibration"),
        ledger_path=args.ledger,
        ledger_signing_key=args.signing_key,
        options=options,
    )
    run = spec.run(config)
    payload = summary(run)
    with provenance.command_line(getattr(args, "argv", ["dpcert"])):
        record = provenance.record(
            provenance.BANDIT_RUN, seeds=provenance.seeds(args.seed, spec.seeds), clock=clock
        )
    payload[provenance.KEY] = record
    if args.out is not None:
        stem = f"{args.algorithm}-{args.privacy}-{args.calibration}"
        paths = save_results(run, args.out, stem, record=record)
        payload["files"] = {k: str(v) for k, v in paths.items()}
    if args.plot is not None:
        drawn = plot_regret({f"{args.algorithm} ({args.privacy})": run}, args.plot)
        payload["plot"] = None if drawn is None else str(drawn)
        if drawn is None:
            sys.stderr.write("dpcert: matplotlib is not installed; no plot (pip install 'dpcert[plot]')\n")
    if run.target is not None and not run.target_met:  # no target (non-private): met trivially
        sys.stderr.write(
            f"dpcert: warning: the certified guarantee (epsilon={run.max_user_epsilon:.6g} at "
            f"delta={run.target.delta:g}) does not meet the requested epsilon={run.target.epsilon:g} "
            f"({args.calibration} calibration)\n"
        )
    certificate = run.certificate
    rows = [
        ("algorithm", run.algorithm),
        ("privacy", args.privacy),
        ("runs x horizon", f"{payload['runs']} x {payload['horizon']}"),
        ("regret mean", payload["regret"]["mean"]),
        ("regret stderr", payload["regret"]["stderr"]),
        ("users", run.users),
        ("max user epsilon", run.max_user_epsilon),
        *_ledger_view(run, args.ledger),
        ("certificate", "none (non-private)" if certificate is None else certificate.summary()),
        ("seconds", run.seconds),
    ]
    emit(args, payload, rows)
    return EXIT_OK


def _list(args: argparse.Namespace) -> int:
    known = registry.algorithms()
    payload = {
        "algorithms": [
            {"name": s.name, "description": s.description, "privacy": list(s.privacy_models)}
            for s in known.values()
        ]
    }
    emit(
        args, payload, [(s.name, f"{s.description} [{', '.join(s.privacy_models)}]") for s in known.values()]
    )
    return EXIT_OK


def reproduction_options(spec: Any, options: dict[str, Any]) -> dict[str, Any]:
    """Refuse ``--option`` keys that are not keyword-only settings of the reproduction ``spec``."""
    known = sorted(
        name
        for name, parameter in inspect.signature(spec.run).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    )
    for key in options:
        if key not in known:
            allowed = ", ".join(known) if known else "none (this reproduction takes no options)"
            raise InvalidParameter("--option", key, f"a key {spec.name} reads: {allowed}")
    return options


def _reproduce(args: argparse.Namespace) -> int:
    if args.list:
        known = registry.reproductions()
        payload = {"reproductions": [{"name": s.name, "description": s.description} for s in known.values()]}
        emit(args, payload, [(s.name, s.description) for s in known.values()])
        return EXIT_OK
    if not args.name:
        sys.stderr.write("dpcert: error: give a reproduction NAME or --list\n")
        return EXIT_BAD_INPUT
    args.name = current_name(args.name)  # a previous release's name: one notice on stderr
    spec = registry.reproduction(args.name)
    with provenance.command_line(getattr(args, "argv", ["dpcert", "reproduce", args.name])):
        return _reproduce_one(args, spec)


def _reproduce_one(args: argparse.Namespace, spec: Any) -> int:
    try:
        import matplotlib  # noqa: F401  (every reproduction writes figures: refuse before any work)
    except ImportError:
        sys.stderr.write(
            "dpcert: error: reproduce writes figures and needs matplotlib: pip install 'dpcert[plot]'\n"
        )
        return EXIT_BAD_INPUT
    options = reproduction_options(spec, parse_options(getattr(args, "option", [])))
    if options and args.scheduler != "local":
        raise InvalidParameter("--option", sorted(options)[0], "only with --scheduler local")
    if args.horizon is not None:
        if args.name not in FIGURES:
            sys.stderr.write(
                f"dpcert: error: argument --horizon: allowed only for {', '.join(FIGURES)} "
                f"(not {args.name})\n"
            )
            return EXIT_BAD_INPUT
        if options:
            raise InvalidParameter("--option", sorted(options)[0], "not together with --horizon")
    check_reproduce_memory(args.name, args.runs, args.horizon, options)
    if args.scheduler == "local" and args.horizon is None:
        result = dict(spec.run(args.runs, args.out, args.seed, **options))
    else:
        result = reproduce(
            args.name,
            args.runs,
            args.out,
            args.seed,
            scheduler=args.scheduler,
            horizon=args.horizon,
            progress=sys.stderr.isatty(),
        )
    rows = [(k, v) for k, v in result.items() if isinstance(v, (str, int, float, bool)) and k != "table"]
    emit(args, result, rows)
    if not getattr(args, "json", False) and isinstance(result.get("table"), str):
        sys.stdout.write("\n" + result["table"])
    return EXIT_OK
