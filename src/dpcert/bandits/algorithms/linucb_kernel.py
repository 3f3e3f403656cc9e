"""Compiled rounds of the batched LinUCB engine on fixed arm sets (numba; optional extra ``fast``).

:func:`dpcert.bandits.algorithms.linucb.run_batched_linucb` runs Algorithm 1 of Chowdhury & Zhou (2022),
"Shuffle Private Linear Contextual Bandits", for many runs at once.  Its rounds are sequential: with batch
size B = 1 (LinUCB, LDP, JDP) the T = 20 000 rounds of Chowdhury & Zhou 2022, Figure 1, each cost a few
dozen small NumPy calls (arm scores, argmax, rewards, noise, the Gauss–Jordan solve), so call overhead, not
arithmetic, dominates.  This module runs the same rounds as compiled loops over the runs.  The engine uses
it when numba is installed and the arm set is fixed (the setting of Chowdhury & Zhou 2022, §5); otherwise,
or with
``engine="numpy"``, the NumPy path runs.

Same values as the NumPy path, on every CPU and BLAS kernel.  Every quantity is computed by the same
floating-point operations in the same order, none of them through BLAS: the arm scores ⟨φ, θ̂⟩ and
‖φ‖²_{V⁻¹} as one rounded product and one rounded sum per entry of the statistic, in order
(:func:`~dpcert.bandits.algorithms.linucb_model.fixed_order_scores`; the NumPy path takes the same
maximiser through :func:`~dpcert.bandits.algorithms.linucb_model.choose_arms`), the UCB index, rewards and
per-user sums as the NumPy expressions do, the tree's prefix noise summed from the lowest level up,
the Gauss–Jordan elimination step by step.  Random numbers come from the same generators in the same
order (the environment's rewards from the run's generator, each privatizer's noise from its own stream
through its :class:`~dpcert.bandits.algorithms.linucb_privatizers.NormalPool`), so the chosen arms,
regrets and generator states are the same.

Privacy is unchanged.  Before the noise of any release is drawn, the engine's ``before_release``
charges that release (the runs' :class:`~dpcert.session.PrivacySession`): the rounds are
processed in chunks, and every release of a chunk is charged, in order, before the chunk's noise is
taken from the streams, so a refused charge stops the run before the noise of that release (or of any
later one) exists.  P_Vec's bit sums run compiled too (:func:`_bit_sums`), from its rounding uniforms and
binomial noise counts drawn per chunk after the chunk's charges, from the same two streams its NumPy
``add_batch`` draws from; aggregators of other types are run by their own ``add_batch`` between
compiled steps, one batch at a time, after the charge.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert.bandits.algorithms.linucb_model import repair_models
from dpcert.bandits.algorithms.linucb_privatizers import (
    ExactRunningSum,
    LocalGaussianSum,
    TreeSum,
    VecSum,
    reuse_pool,
    symmetric_index,
)
from dpcert.errors import InvalidParameter


def _numba_installed() -> bool:
    """Whether numba (the optional extra ``fast``) can be imported, found without importing it."""
    if "numba" in sys.modules:
        return sys.modules["numba"] is not None  # None: imports of it are blocked
    try:
        return importlib.util.find_spec("numba") is not None
    except (ImportError, ValueError):  # pragma: no cover - depends on the installation
        return False


AVAILABLE = _numba_installed()
numba: ModuleType | None = None  # imported by _bind_compiled() on the first compiled run, not at start-up
_COMPILED: list[str] = []  # the steps compiled by numba, bound by _bind_compiled()
ENGINES = ("auto", "numpy", "numba")
CHUNK_VALUES = 1 << 20  # noise values handed to one compiled call (8 MiB of float64)
EXACT, LOCAL, TREE, OPAQUE, BITS = 0, 1, 2, 3, 4
BERNOULLI, GAUSSIAN = 0, 1
ARM_PADDING = 16  # arms per two 512-bit registers of float64


def _compiled() -> Callable[[Callable[..., Any]], Any]:
    """Marks a step for ``numba.njit`` with an on-disk cache and NumPy's float semantics (x/0 gives inf,
    no exception; no fast-math: every multiply and add is rounded on its own, as in NumPy).  The step
    stays a Python function until :func:`_bind_compiled` (numba is not imported at start-up)."""

    def wrap(function: Callable[..., Any]) -> Any:
        _COMPILED.append(function.__name__)
        return function

    return wrap


def _bind_compiled() -> ModuleType | None:
    """Import numba and replace every marked step of this module by its numba dispatcher, once (the
    steps call each other through the module's globals, so all are bound before any runs compiled);
    ``None`` without numba."""
    global numba
    if not AVAILABLE:
        return None
    if numba is None:
        module = importlib.import_module("numba")
        namespace = globals()
        for name in _COMPILED:
            namespace[name] = module.njit(cache=True, error_model="numpy")(namespace[name])
        numba = module
    return numba


def wanted(engine: str, fixed_arms: bool, observed: bool) -> bool:
    """Whether :func:`run_fixed_arms` runs the rounds: ``engine`` ``"auto"`` (when numba is installed,
    the arms are fixed and no ``on_batch`` observer is set), ``"numba"`` (required) or ``"numpy"``."""
    if engine not in ENGINES:
        raise InvalidParameter("engine", engine, "one of " + ", ".join(repr(e) for e in ENGINES))
    if engine == "numba":
        if not AVAILABLE:
            raise InvalidParameter(
                "engine", engine, "'auto' or 'numpy' (numba is not installed: dpcert[fast])"
            )
        if not fixed_arms or observed:
            raise InvalidParameter(
                "engine", engine, "'auto' or 'numpy' with changing arm sets or an on_batch observer"
            )
        return True
    return engine == "auto" and AVAILABLE and fixed_arms and not observed


# ----------------------------------------------------------------------------- compiled steps
@_compiled()
def _accumulate(weights, runs, design, instance, first, buffer, zero):
    """``buffer[i, k] = Σ_j weights[runs[i], j] · design[instance, first + j, k]`` for three runs that share
    an instance, one rounded product and one rounded sum per term in order of j (as
    :func:`~dpcert.bandits.algorithms.linucb_model.fixed_order_scores`), five terms per pass over the arms;
    the three runs' sums are independent chains over the same loaded
    design values (a run listed twice gives its sums twice).  The first pass starts each sum at ``zero``
    (0 of the buffer's dtype) in registers, the later ones from the buffer."""
    count, arms = weights.shape[1], design.shape[2]
    r0, r1, r2 = runs[0], runs[1], runs[2]
    if count < 5:
        for k in range(arms):
            buffer[0, k] = zero
            buffer[1, k] = zero
            buffer[2, k] = zero
    j = 0
    while j + 5 <= count:
        a0, a1, a2, a3, a4 = weights[r0, j : j + 5]
        b0, b1, b2, b3, b4 = weights[r1, j : j + 5]
        c0, c1, c2, c3, c4 = weights[r2, j : j + 5]
        row = first + j
        if j == 0:  # the first five terms of every sum: 0 + the first product, then the next four
            for k in range(arms):
                x0, x1 = design[instance, row, k], design[instance, row + 1, k]
                x2, x3, x4 = (
                    design[instance, row + 2, k],
                    design[instance, row + 3, k],
                    design[instance, row + 4, k],
                )
                acc = zero + a0 * x0
                acc = acc + a1 * x1
                acc = acc + a2 * x2
                acc = acc + a3 * x3
                buffer[0, k] = acc + a4 * x4
                acc = zero + b0 * x0
                acc = acc + b1 * x1
                acc = acc + b2 * x2
                acc = acc + b3 * x3
                buffer[1, k] = acc + b4 * x4
                acc = zero + c0 * x0
                acc = acc + c1 * x1
                acc = acc + c2 * x2
                acc = acc + c3 * x3
                buffer[2, k] = acc + c4 * x4
            j += 5
            continue
        for k in range(arms):
            x0, x1, x2 = design[instance, row, k], design[instance, row + 1, k], design[instance, row + 2, k]
            x3, x4 = design[instance, row + 3, k], design[instance, row + 4, k]
            acc = buffer[0, k] + a0 * x0
            acc = acc + a1 * x1
            acc = acc + a2 * x2
            acc = acc + a3 * x3
            buffer[0, k] = acc + a4 * x4
            acc = buffer[1, k] + b0 * x0
            acc = acc + b1 * x1
            acc = acc + b2 * x2
            acc = acc + b3 * x3
            buffer[1, k] = acc + b4 * x4
            acc = buffer[2, k] + c0 * x0
            acc = acc + c1 * x1
            acc = acc + c2 * x2
            acc = acc + c3 * x3
            buffer[2, k] = acc + c4 * x4
        j += 5
    while j < count:
        a, b, c = weights[r0, j], weights[r1, j], weights[r2, j]
        for k in range(arms):
            x = design[instance, first + j, k]
            buffer[0, k] = buffer[0, k] + a * x
            buffer[1, k] = buffer[1, k] + b * x
            buffer[2, k] = buffer[2, k] + c * x
        j += 1


@_compiled()
def _score(mean_weights, width_weights, runs, design, instance, means, widths, zero):
    """⟨φ_k, θ̂⟩ and ‖φ_k‖²_{V⁻¹} of every arm in the index dtype (the NumPy path's ``weights @ design``)
    for three runs on the same instance: rows 0–2 of ``means`` and ``widths`` (``zero``: 0 of their dtype)."""
    _accumulate(mean_weights, runs, design, instance, 0, means, zero)
    _accumulate(width_weights, runs, design, instance, mean_weights.shape[1], widths, zero)


LANES = 8  # index values compared per block in the argmax


@_compiled()
def _ucb_arm(means, widths, beta, zero, index):
    """argmax of ``mean + β √max(width, 0)`` (float64, on the fixed-order scores; ``zero`` of the scores'
    dtype); lowest index on exact ties, the first NaN if any (as ``np.argmax``).

    The maximum is found block by block (``LANES`` values, compared without branches); only a block
    whose largest value beats the best so far is searched for its first position of that value.
    Equal values (``-0.0 == 0.0`` too) keep the earliest, as the sequential ``value > best`` scan does.
    """
    arms = means.shape[0]
    for k in range(arms):
        width = widths[k]
        if width < zero:
            width = zero
        index[k] = np.float64(means[k]) + beta * np.float64(np.sqrt(width))
    best_arm, best = 0, index[0]
    if best != best:
        return 0
    full = arms - arms % LANES
    for first in range(0, full, LANES):
        top = index[first]
        nan = False
        for lane in range(LANES):
            value = index[first + lane]
            top = value if value > top else top
            nan |= value != value
        if nan:
            for lane in range(LANES):
                if index[first + lane] != index[first + lane]:
                    return first + lane
        if top > best:
            for lane in range(LANES):
                if index[first + lane] == top:
                    best_arm, best = first + lane, top
                    break
    for k in range(full, arms):
        value = index[k]
        if value != value:
            return k
        if value > best:
            best_arm, best = k, value
    return best_arm


@_compiled()
def _choose(start, stop, betas, draws, offset, rewards_model, arms, model, scratch, gaps, actions):
    """One batch's arms and gaps (the same in each of its rounds ``start .. stop − 1``, written to every
    run's row of ``gaps`` and ``actions``), its rewards and every run's sum of its users' statistics
    ``(φy, upper(φφᵀ))``."""
    reward_model, noise_std, block, zero = rewards_model
    design, arm_means, best_means, features, outer = arms
    mean_weights, width_weights, rewards, statistics = model[0], model[1], model[2], model[3]
    means_buffer, widths_buffer, index_buffer = scratch[0], scratch[1], scratch[2]
    runs, d, q = mean_weights.shape[0], mean_weights.shape[1], width_weights.shape[1]
    users, arm_count = stop - start, arm_means.shape[1]
    trio = scratch[10]
    for position in range(runs):  # the runs of one instance next to each other, scored three at a time
        instance, group = position // (runs // block), position % (runs // block)
        r = group * block + instance
        slot = group % 3
        if slot == 0:
            for i in range(3):  # this run and the next two of the instance (or this one again)
                trio[i] = min(group + i, runs // block - 1) * block + instance
            _score(mean_weights, width_weights, trio, design, instance, means_buffer, widths_buffer, zero)
        arm = _ucb_arm(means_buffer[slot, :arm_count], widths_buffer[slot, :arm_count], betas[r], zero,
                       index_buffer)  # fmt: skip
        mean = arm_means[instance, arm]
        gap = best_means[instance] - mean
        for t in range(start, stop):
            gaps[r, t] = gap
            actions[r, t] = arm
        for u in range(users):
            x = draws[offset + r * users + u]
            if reward_model == BERNOULLI:
                y = 1.0 if x < mean else 0.0
            else:
                y = mean + noise_std * x
            rewards[r, u] = min(max(y, -1.0), 1.0)
        for i in range(d):  # the sum over users, in order (np.sum over the users' axis)
            acc = features[instance, arm, i] * rewards[r, 0]
            for u in range(1, users):
                acc = acc + features[instance, arm, i] * rewards[r, u]
            statistics[r, i] = acc
        for j in range(q):
            value = outer[instance, arm, j]
            acc = value
            for _ in range(1, users):
                acc = acc + value
            statistics[r, d + j] = acc


@_compiled()
def _eliminate_all(work, row, d):
    """Gauss–Jordan on ``[V | I | u]`` without pivoting: the steps of ``_BatchedGaussJordan``, entry for
    entry; returns whether every pivot was positive (V positive definite, Sylvester's criterion)."""
    width = 2 * d + 1
    positive = True
    for k in range(d):
        pivot = work[k, k]
        if not pivot > 0.0:
            positive = False
        for j in range(width):
            row[j] = work[k, j] / pivot
        for i in range(d):
            factor = work[i, k]
            for j in range(width):
                work[i, j] = work[i, j] - factor * row[j]
        for j in range(width):
            work[k, j] = row[j]
    return positive


@_compiled()
def _load(statistic, lam, symmetric, work):
    """``[V | I | u]`` with ``V = λ I + sym(upper)`` (the NumPy path's ``gram += λ I``) and ``u``."""
    d = work.shape[0]
    for i in range(d):
        for j in range(d):
            work[i, j] = statistic[d + symmetric[i * d + j]] + (lam if i == j else 0.0)
            work[i, d + j] = 1.0 if i == j else 0.0
        work[i, 2 * d] = statistic[i]


@_compiled()
def _publish(stop, c, kinds, levels, block, released, external, model, scratch):
    """Add batch ``c`` of the chunk to every run's sum with its privatizer's noise, solve ``V θ̂ = u`` and
    load the scoring weights (θ̂, upper(V⁻¹)) for the next batch.  Returns whether some noisy run's V was
    not positive definite (flagged in ``suspect``; the caller repairs those runs before the next batch).

    ``released`` is :func:`_draw_noise`'s: its ``noise`` holds the chunk's standard normals, privatizer
    g's local noise of batch c, run b, entry p at ``offsets[g] + (c·block + b)·size + p``, times
    ``scales[c, g]`` (σ√users), the tree's new node values from ``tree_cursor[g]`` on, times
    ``scales[c, g]`` (σ).  P_Vec's sums were added to ``total`` by :func:`_bit_sums`."""
    noise, offsets, scales, tree_cursor = released[0], released[1], released[2], released[3]
    mean_weights, width_weights, _, statistics, total, noisy, node_noise, node_ids = model[:8]
    lam, noisy_rows, suspect, upper_rows, upper_cols, symmetric = model[8:]
    work, row, prefix = scratch[3], scratch[4], scratch[5]
    batch_work, batch_row, positive = scratch[7], scratch[8], scratch[9]
    size, d, q = total.shape[1], mean_weights.shape[1], width_weights.shape[1]
    for g in range(kinds.shape[0]):  # tree: refresh the nodes whose dyadic block starts now
        if kinds[g] == TREE:
            leaf = (stop + levels[g, 1] - 1) // levels[g, 1]  # batches released: the tree's leaf index
            count = 0
            for level in range(levels[g, 0]):
                if (leaf >> level) != node_ids[g, level]:
                    count += 1
            cursor, scale = tree_cursor[g], scales[c, g]  # the next node value of the stream
            for level in range(count):
                for b in range(block):
                    for p in range(size):
                        node_noise[g, level, b, p] = scale * noise[cursor]
                        cursor += 1
            tree_cursor[g] = cursor
            for level in range(levels[g, 0]):
                node_ids[g, level] = leaf >> level
    for g in range(kinds.shape[0]):  # every run's noisy sum
        kind = kinds[g]
        for b in range(block):
            r = g * block + b
            if kind == EXACT:
                for p in range(size):
                    total[r, p] += statistics[r, p]
                    noisy[r, p] = total[r, p]
            elif kind == LOCAL:
                base, scale = offsets[g] + (c * block + b) * size, scales[c, g]
                for p in range(size):
                    total[r, p] += statistics[r, p] + noise[base + p] * scale
                    noisy[r, p] = total[r, p]
            elif kind == TREE:  # the prefix's nodes summed from the lowest level up (as TreeSum)
                for p in range(size):
                    total[r, p] += statistics[r, p]
                    prefix[p] = 0.0
                leaf = (stop + levels[g, 1] - 1) // levels[g, 1]
                for level in range(levels[g, 0]):
                    if (leaf >> level) & 1:
                        for p in range(size):
                            prefix[p] = prefix[p] + node_noise[g, level, b, p]
                for p in range(size):
                    noisy[r, p] = total[r, p] + prefix[p]
            elif kind == BITS:
                for p in range(size):
                    noisy[r, p] = total[r, p]
            else:
                for p in range(size):
                    noisy[r, p] = external[r, p]
    runs = total.shape[0]
    for i in range(d):  # [V | I | u] of every run, runs on the last axis (one vector operation per entry)
        for j in range(d):
            entry = noisy[:, d + symmetric[i * d + j]]  # a column of the runs' sums
            if i == j:
                for r in range(runs):
                    batch_work[i, j, r] = entry[r] + lam[r]
                    batch_work[i, d + j, r] = 1.0
            else:
                for r in range(runs):
                    batch_work[i, j, r] = entry[r] + 0.0  # as `+ λ·0`: −0 becomes +0
                    batch_work[i, d + j, r] = 0.0
        for r in range(runs):
            batch_work[i, 2 * d, r] = noisy[r, i]
    _eliminate_runs(batch_work, batch_row, positive, d)
    repairs = False
    for r in range(runs):
        if not positive[r]:  # a pivot not positive and finite: the full elimination, entry for entry
            _load(noisy[r], lam[r], symmetric, work)
            if not _eliminate_all(work, row, d) and noisy_rows[r]:
                suspect[r] = True
                repairs = True
                continue
            batch_work[:, :, r] = work
    # the scoring weights θ̂ and upper(V⁻¹) (a suspect run's are replaced by the repair before they are used)
    for i in range(d):
        source = batch_work[i, 2 * d]
        for r in range(runs):
            mean_weights[r, i] = source[r]
    for j in range(q):
        source = batch_work[upper_rows[j], d + upper_cols[j]]
        for r in range(runs):
            width_weights[r, j] = source[r]
    return repairs


@_compiled()
def _eliminate_runs(work, row, positive, d):
    """:func:`_eliminate_all` on the entries that can change, for every run at once: runs on the last axis
    of ``work`` (d, 2d + 1, runs), so that each operation is one vector instruction over the runs.
    ``positive[r]`` says whether run r's pivots were all positive and finite; only then are its values
    used (they equal :func:`_eliminate_all`'s), else the caller runs :func:`_eliminate_all` for it.

    At step k the columns j < k of V's block are unit vectors already and the columns ``d + m``,
    m > k, of I's block still are: their entries in the pivot row are 0, so the update subtracts
    ``factor · 0`` and leaves them as they are.  Column k is not read again.  So only the d + 1
    columns ``k+1 .. d−1``, ``d .. d+k`` and ``2d`` change.
    """
    runs = work.shape[2]
    for r in range(runs):
        positive[r] = True
    for k in range(d):
        for r in range(runs):
            pivot = work[k, k, r]
            if not (pivot > 0.0 and pivot < np.inf):
                positive[r] = False
        for j in range(k + 1, d + k + 1):
            for r in range(runs):
                row[j, r] = work[k, j, r] / work[k, k, r]
        for r in range(runs):
            row[2 * d, r] = work[k, 2 * d, r] / work[k, k, r]
        for i in range(d):
            if i == k:
                continue
            for j in range(k + 1, d + k + 1):
                for r in range(runs):
                    work[i, j, r] = work[i, j, r] - work[i, k, r] * row[j, r]
            for r in range(runs):
                work[i, 2 * d, r] = work[i, 2 * d, r] - work[i, k, r] * row[2 * d, r]
        for j in range(k + 1, d + k + 1):
            for r in range(runs):
                work[k, j, r] = row[j, r]
        for r in range(runs):
            work[k, 2 * d, r] = row[2 * d, r]


@_compiled()
def _bit_sums(c, start, stop, chunk_start, kinds, block, released, arms, model, actions):
    """P_Vec's release of batch c (rounds ``start .. stop − 1``) for every run, added to its ``total``:
    the protocol of :meth:`~dpcert.mechanisms.shuffle.binomial_sum.BinomialSumMechanism.simulate` on the flat
    statistic, entry for entry (Chowdhury & Zhou 2022, Alg. 5–7; Cheu et al. 2019).

    Each user's entry v is encoded as ``⌊u⌋ + [U < u − ⌊u⌋]`` with ``u = clip((v + B)·g/(2B), 0, g)``
    and U the batch's uniform (``noise[offsets[g] + block·size·(start − chunk_start) + (b·users + i)·size
    + p]`` for run b, user i, entry p); the analyzer sees the encodings' sum plus the binomial noise count
    ``bits[c, g, b, p]`` and returns ``(2B/g)·(count − n b p) − n B`` (constants per batch in
    ``constants[c, g]``: B, g/(2B), g, 2B/g, n b p, n B)."""
    noise, offsets, bits, constants = released[0], released[1], released[4], released[5]
    features, outer = arms[3], arms[4]
    rewards, total = model[2], model[4]
    size, d = total.shape[1], features.shape[2]
    users = stop - start
    for g in range(kinds.shape[0]):
        if kinds[g] != BITS:
            continue
        bound, to_units, top = constants[c, g, 0], constants[c, g, 1], constants[c, g, 2]
        unit, centre, shift = constants[c, g, 3], constants[c, g, 4], constants[c, g, 5]
        base = offsets[g] + block * size * (start - chunk_start)
        for b in range(block):
            r = g * block + b
            arm = actions[r, start]
            for p in range(size):
                count = np.int64(0)
                for i in range(users):
                    value = features[b, arm, p] * rewards[r, i] if p < d else outer[b, arm, p - d]
                    scaled = (value + bound) * to_units
                    scaled = min(max(scaled, 0.0), top)
                    whole = np.floor(scaled)
                    if noise[base + (b * users + i) * size + p] < scaled - whole:
                        whole += 1.0
                    count += np.int64(whole)
                count += bits[c, g, b, p]
                total[r, p] += unit * (np.float64(count) - centre) - shift


@_compiled()
def _run_chunk(first, bounds, betas, draws, rewards_model, kinds, levels, released, arms, model, scratch,
               gaps, actions):  # fmt: skip
    """Batches ``first ..`` of a chunk whose releases are all charged already; returns the batch after
    which some runs need :func:`_repair` (−1 when the chunk is done)."""
    block = rewards_model[2]
    runs = gaps.shape[0]
    external = model[5]  # no external releases here: a placeholder of the right type
    for c in range(first, bounds.shape[0] - 1):
        start, stop = bounds[c], bounds[c + 1]
        offset = runs * (start - bounds[0])
        _choose(start, stop, betas[c], draws, offset, rewards_model, arms, model, scratch, gaps, actions)
        _bit_sums(c, start, stop, bounds[0], kinds, block, released, arms, model, actions)
        if _publish(stop, c, kinds, levels, block, released, external, model, scratch):
            return c
    return -1


# ----------------------------------------------------------------------------- the driver
COMPILE_SECONDS = "about 30 s"
"""Measured time of the first compilation (`benchmarks/RESULTS.md`, "Same numbers on every CPU and BLAS
kernel": 28 s on an idle 2-core machine)."""


def needs_compiling() -> bool:
    """Whether the next compiled run compiles the rounds: numba has neither loaded them in this process
    nor an on-disk cache of them for this source (numba's own cache index, read without loading it)."""
    if _bind_compiled() is None:
        return False
    for function in (_run_chunk, _choose, _publish, _bit_sums):
        if function.signatures:
            continue
        try:
            if not function._cache._cache_file._load_index():
                return True
        except Exception:  # another numba layout: assume it compiles
            return True
    return False


def announce_compilation() -> None:
    """One line on stderr before numba compiles the rounds, so that a first run does not sit silent."""
    if needs_compiling():
        print(
            f"dpcert: compiling the LinUCB rounds with numba ({COMPILE_SECONDS}, once: cached on disk)",
            file=sys.stderr,
            flush=True,
        )


def run_fixed_arms(
    env: Any,
    blocks: list[tuple[slice, Any, np.random.Generator]],
    design: np.ndarray,
    lam: np.ndarray,
    floor: np.ndarray,
    noisy_rows: np.ndarray,
    beta_at: Callable[[int], np.ndarray],
    gaps: np.ndarray,
    actions: np.ndarray,
    clips: np.ndarray,
    *,
    horizon: int,
    batch_size: int,
    rng: np.random.Generator,
    before_release: Callable[[int, int], None] | None,
) -> tuple[int, np.ndarray]:
    """The batches of :func:`~dpcert.bandits.algorithms.linucb.run_batched_linucb` on ``env``'s fixed arms.

    ``blocks`` are the engine's per-privatizer aggregators (rows, state, noise stream); ``design`` its
    arm scores ``(instances, d + q, K)``; ``lam``, ``floor``, ``noisy_rows`` per run;
    ``beta_at(t)`` the radius after t rounds.  Fills ``gaps``, ``actions`` and ``clips``; returns the
    number of batches and the final radius.
    """
    _bind_compiled()
    announce_compilation()
    d, block, runs = env.dimension, env.runs, gaps.shape[0]
    upper_rows, upper_cols = (np.ascontiguousarray(v, dtype=np.int64) for v in np.triu_indices(d))
    q = upper_rows.size
    size = d + q
    features = np.ascontiguousarray(env.arms, dtype=np.float64)
    arm_means = np.ascontiguousarray(env.means(features))
    outer = np.ascontiguousarray(features[..., upper_rows] * features[..., upper_cols])
    # arms padded with zero columns to a whole number of SIMD registers (scores of the padding unused)
    padded = np.zeros(design.shape[:2] + (-(-design.shape[2] // ARM_PADDING) * ARM_PADDING,), design.dtype)
    padded[:, :, : design.shape[2]] = design
    arms = (padded, arm_means, arm_means.max(axis=1), features, outer)
    kind_of = {
        ExactRunningSum: EXACT,
        LocalGaussianSum: LOCAL,
        TreeSum: TREE,
        VecSum: BITS,
    }
    kinds = np.array([kind_of.get(type(a), OPAQUE) for _, a, _ in blocks], dtype=np.int64)
    # per block: the tree's levels and its rounds per leaf (the batch size), (0, 1) for other kinds
    levels = np.array(
        [(a.levels, a.leaf) if isinstance(a, TreeSum) else (0, 1) for _, a, _ in blocks],
        dtype=np.int64,
    ).reshape(len(blocks), 2)
    node_noise = np.zeros((len(blocks), max(1, int(levels[:, 0].max())), block, size))
    node_ids = np.full(node_noise.shape[:2], -1, dtype=np.int64)
    mean_weights = np.zeros((runs, d), dtype=design.dtype)
    width_weights = np.zeros((runs, q), dtype=design.dtype)
    width_weights[:, upper_rows == upper_cols] = (1.0 / lam)[:, None]  # V₀⁻¹ = I/λ
    suspect = np.zeros(runs, dtype=np.bool_)
    symmetric = np.ascontiguousarray(symmetric_index(d), dtype=np.int64)
    model = (
        mean_weights, width_weights, np.zeros((runs, batch_size)), np.zeros((runs, size)),
        np.zeros((runs, size)), np.zeros((runs, size)), node_noise, node_ids,
        np.ascontiguousarray(lam, dtype=np.float64), np.ascontiguousarray(noisy_rows, dtype=np.bool_),
        suspect, upper_rows, upper_cols, symmetric,
    )  # fmt: skip
    noisy = model[5]
    arm_count = padded.shape[2]
    scratch = (
        np.empty((3, arm_count), dtype=design.dtype), np.empty((3, arm_count), dtype=design.dtype),
        np.empty(arm_count), np.empty((d, 2 * d + 1)), np.empty(2 * d + 1), np.empty(size), np.empty(size),
        np.empty((d, 2 * d + 1, runs)), np.empty((2 * d + 1, runs)), np.empty(runs, dtype=np.bool_),
        np.empty(3, dtype=np.int64),
    )  # fmt: skip
    reward_model = BERNOULLI if env.reward == "bernoulli" else GAUSSIAN
    rewards_model = (reward_model, float(env.noise_std), block, design.dtype.type(0))
    repair_state = (suspect, noisy, lam, floor, clips, mean_weights, width_weights, d, symmetric)
    starts = list(range(0, horizon, batch_size)) + [horizon]
    opaque = bool((kinds == OPAQUE).any())
    # P_Vec draws one uniform per user and entry: its chunks hold as many values as the others'
    per_user = batch_size if (kinds == BITS).any() else 1
    per_chunk = 1 if opaque else max(1, CHUNK_VALUES // (runs * size * per_user))
    if (kinds == BITS).any():  # the bit-sum protocol's input range, checked once for every arm and reward
        bound = min(a.parameters.bound for _, a, _ in blocks if isinstance(a, VecSum))
        check.bounded_array("data", np.concatenate([features, outer], axis=-1), -bound, bound)
    tree_ids = node_ids.copy()  # the driver's copy of the tree schedule: how many values each batch draws
    # buffers reused by every chunk (drawn into with `out=`: the same values as fresh draws, without
    # touching fresh memory each time)
    draws_buffer = np.empty(runs * min(horizon, per_chunk * batch_size))
    noise_store = [np.empty(0)]
    for first in range(0, len(starts) - 1, per_chunk):
        bounds = np.array(starts[first : first + per_chunk + 1], dtype=np.int64)
        users = np.diff(bounds)
        if before_release is not None:  # every release of the chunk is charged before its noise exists
            for start, count in zip(bounds[:-1].tolist(), users.tolist(), strict=True):
                before_release(start // batch_size, count)
        betas = np.ascontiguousarray(np.stack([beta_at(int(s)) for s in bounds[:-1]]), dtype=np.float64)
        draws = draws_buffer[: runs * int(users.sum())]
        if reward_model == BERNOULLI:
            rng.random(out=draws)
        else:
            rng.standard_normal(out=draws)
        released = _draw_noise(blocks, kinds, levels, bounds, tree_ids, size, noise_store)
        if opaque:  # one batch: the privatizers' own releases between the compiled steps
            start, stop = int(bounds[0]), int(bounds[1])
            _choose(start, stop, betas[0], draws, 0, rewards_model, arms, model, scratch, gaps, actions)
            _bit_sums(0, start, stop, start, kinds, block, released, arms, model, actions)
            external = np.zeros((runs, size))
            for g, (rows, aggregator, stream) in enumerate(blocks):
                if kinds[g] == OPAQUE:
                    arm = actions[rows, start]
                    chosen, chosen_outer = features[np.arange(block), arm], outer[np.arange(block), arm]
                    statistics = np.concatenate(
                        [
                            chosen[:, None, :] * model[2][rows, : stop - start, None],
                            np.broadcast_to(chosen_outer[:, None, :], (block, stop - start, q)),
                        ],
                        axis=-1,
                    )
                    external[rows] = aggregator.add_batch(statistics, stop, stream)
            if _publish(stop, 0, kinds, levels, block, released, external, model, scratch):
                _repair(*repair_state)
        else:
            resume = 0
            while resume >= 0:
                stopped = _run_chunk(
                    resume, bounds, betas, draws, rewards_model, kinds, levels, released, arms, model,
                    scratch, gaps, actions,
                )  # fmt: skip
                if stopped >= 0:
                    _repair(*repair_state)
                    stopped += 1
                resume = stopped if 0 < stopped < users.size else -1
    return len(starts) - 1, beta_at(horizon)


def _repair(
    suspect: np.ndarray,
    noisy: np.ndarray,
    lam: np.ndarray,
    floor: np.ndarray,
    clips: np.ndarray,
    mean_weights: np.ndarray,
    width_weights: np.ndarray,
    d: int,
    symmetric: np.ndarray,
) -> None:
    """The runs whose noisy V was not positive definite (or too ill-conditioned to tell): the NumPy
    path's repair on them (:func:`~dpcert.bandits.algorithms.linucb_model.repair_models`: eigenvalues
    clipped at the floor, post-processing of the published V, privacy-neutral; each clip counted), then
    their scoring weights."""
    rows = np.flatnonzero(suspect)
    gram = noisy[rows][:, d + symmetric].reshape(-1, d, d) + lam[rows, None, None] * np.eye(d)
    inverse, theta, clipped = repair_models(gram, noisy[rows, :d], floor[rows])
    clips[rows] += clipped
    upper_rows, upper_cols = np.triu_indices(d)
    mean_weights[rows] = theta
    width_weights[rows] = inverse[:, upper_rows, upper_cols]
    suspect[rows] = False


def _draw_noise(
    blocks: list[tuple[slice, Any, np.random.Generator]],
    kinds: np.ndarray,
    levels: np.ndarray,
    bounds: np.ndarray,
    tree_ids: np.ndarray,
    size: int,
    store: list[np.ndarray],
) -> tuple[np.ndarray, ...]:
    """The random numbers of a chunk's releases (all charged), from each privatizer's streams in the
    NumPy path's order, as :func:`_publish` and :func:`_bit_sums` read them.

    Returns ``(noise, offsets, scales, tree_cursor, bits, constants)``.  ``noise`` is one flat array:
    the local Gaussian sums' standard normals (per batch, run and entry; scaled by ``σ√users``), the
    tree's new node values (scaled by σ) and P_Vec's rounding uniforms (per batch, run, user and entry),
    privatizer g's from ``offsets[g]`` on.  ``bits`` are P_Vec's binomial noise counts (chunk, groups,
    runs, entries) and ``constants`` its analyzer's constants per batch.  ``store[0]`` is the array reused
    across chunks (replaced by a larger one when a chunk needs more values); the values are drawn into it
    with ``out=``, the same values as fresh draws.
    """
    chunk, groups = bounds.size - 1, len(blocks)
    users = np.diff(bounds)
    offsets = np.zeros(groups, dtype=np.int64)
    tree_cursor = np.zeros(groups, dtype=np.int64)
    scales = np.zeros((chunk, groups))
    block = max(rows.stop - rows.start for rows, _, _ in blocks)
    bit_sums = bool((kinds == BITS).any())
    bits = np.zeros((chunk, groups, block, size) if bit_sums else (1, 1, 1, 1), dtype=np.int64)
    constants = np.zeros((chunk, groups, 6))
    counts, offset = [], 0
    for g, (_, aggregator, stream) in enumerate(blocks):
        count = 0
        if kinds[g] == LOCAL:
            count = chunk * block * size
            scales[:, g] = [aggregator.sigma * math.sqrt(n) for n in users.tolist()]
        elif kinds[g] == TREE:
            leaves = -(-bounds[1:, None] // levels[g, 1])  # batches released: the tree's leaf index
            ids = leaves >> np.arange(levels[g, 0])
            previous = np.vstack([tree_ids[g, None, : levels[g, 0]], ids[:-1]])
            count = int((ids != previous).sum()) * block * size
            tree_ids[g, : levels[g, 0]] = ids[-1]
            scales[:, g] = aggregator.sigma
        elif kinds[g] == BITS:
            count = int(users.sum()) * block * size
            _, noise_stream = aggregator.random_streams(stream)
            for first, n in _equal_runs(users):  # one draw per run of equal batches: the same values
                q = aggregator.mechanism(int(users[first]), size).parameters
                bits[first : first + n, g] = noise_stream.binomial(q.noise_trials, q.p, size=(n, block, size))
                # as encode_values and analyze_count compute them
                constants[first : first + n, g] = (
                    q.bound, q.g / (2.0 * q.bound), q.g, 2.0 * q.bound / q.g, q.noise_trials * q.p,
                    q.users * q.bound,
                )  # fmt: skip
        offsets[g] = tree_cursor[g] = offset
        counts.append(count)
        offset += count
    if store[0].size < offset:
        store[0] = np.empty(offset)
    noise = store[0]
    for g, (_, aggregator, stream) in enumerate(blocks):
        if counts[g] and kinds[g] == BITS:
            rounding, _ = aggregator.random_streams(stream)
            rounding.random(out=noise[offsets[g] : offsets[g] + counts[g]])
        elif counts[g]:
            aggregator.pool = reuse_pool(aggregator.pool, stream)
            aggregator.pool.fill(noise[offsets[g] : offsets[g] + counts[g]])
    return noise, offsets, scales, tree_cursor, bits, constants


def _equal_runs(values: np.ndarray) -> list[tuple[int, int]]:
    """``(first index, length)`` of each run of equal consecutive values."""
    edges = np.flatnonzero(np.diff(values)) + 1
    firsts = np.concatenate(([0], edges))
    return list(zip(firsts.tolist(), np.diff(np.concatenate((firsts, [values.size]))).tolist(), strict=True))
