"""Compiled rounds of the batched LinUCB engine on fixed arm sets (numba; optional extra ``fast``).

:func:`dpcert.bandits.algorithms.linucb.run_batched_linucb` runs Algorithm 1 of Chowdhury & Zhou (2022),
"Shuffle Private Linear Contextual Bandits", for many runs at once.  Its rounds are sequential: with batch
size B = 1 (LinUCB, LDP, JDP) the T = 20 000 rounds of Chowdhury & Zhou 2022, Figure 1, each cost a few
dozen small NumPy calls (arm scores, argmax, rewards, noise, the Gauss–Jordan solve), so call overhead, not
arithmetic, dominates.  This module runs the same rounds as compiled loops over the runs.  The engine uses
it when numba is installed and the arm set is fixed (the setting of Chowdhury & Zhou 2022, §5); otherwise,
or with
``engine="numpy"``, the NumPy path runs.

Same values as the NumPy path.  Every quantity is computed by the same floating-point operations in
the same order: the arm scores ⟨φ, θ̂⟩ and ‖φ‖²_{V⁻¹} as fused multiply-adds over the statistic's
entries in order (how BLAS's gemm kernel forms ``weights @ design``; in float32 this reproduces it
exactly), the UCB index, rewards and per-user sums as the NumPy expressions do, the tree's prefix
noise summed in groups of four levels (as BLAS's gemv kernel does), the Gauss–Jordan elimination
step by step.  Random numbers come from the same generators in the same order (the environment's
rewards from the run's generator, each privatizer's noise from its own stream through its
:class:`~dpcert.bandits.algorithms.linucb._NormalPool`), so the chosen arms are the same; where a BLAS kernel
sums in another order, values can differ in the last bit and only an exact tie between two arms'
indices could then be broken differently.

Privacy is unchanged.  Before the noise of any release is drawn, the engine's ``before_release``
charges that release (the runs' :class:`~dpcert.accounting.session.PrivacySession`): the rounds are
processed in chunks, and every release of a chunk is charged, in order, before the chunk's noise is
taken from the streams, so a refused charge stops the run before the noise of that release (or of any
later one) exists.  Privatizers whose release is not additive noise on the batch sum (P_Vec's bit
sums) are run by their own ``add_batch`` between compiled steps, one batch at a time, after the charge.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from dpcert.errors import InvalidParameter

try:  # the optional extra `fast`; without it the NumPy path runs
    import numba
except ImportError:  # pragma: no cover - depends on the installation
    numba = None

AVAILABLE = numba is not None
ENGINES = ("auto", "numpy", "numba")
CHUNK_VALUES = 1 << 20  # noise values handed to one compiled call (8 MiB of float64)
EXACT, LOCAL, TREE, OPAQUE = 0, 1, 2, 3
BERNOULLI, GAUSSIAN = 0, 1
ARM_PADDING = 16  # arms per 512-bit register in float32


def _compiled(contract: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``numba.njit`` with an on-disk cache and NumPy's float semantics (x/0 gives inf, no exception);
    ``contract`` lets a multiply and an add fuse (the arm scores only).  Without numba: unchanged."""

    def wrap(function: Callable[..., Any]) -> Callable[..., Any]:
        if numba is None:
            return function
        options: dict[str, Any] = {"cache": True, "error_model": "numpy"}
        if contract:
            options["fastmath"] = {"contract"}
        return numba.njit(**options)(function)

    return wrap


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
@_compiled(contract=True)
def _accumulate(weights, design, instance, first, buffer):
    """``buffer[k] = Σ_j weights[j] · design[instance, first + j, k]`` as one fused multiply-add per
    term, in order of j (the order of BLAS's gemm kernel); five terms per pass over the arms."""
    count, arms = weights.shape[0], design.shape[2]
    for k in range(arms):
        buffer[k] = 0
    j = 0
    while j + 5 <= count:
        w0, w1, w2, w3, w4 = weights[j], weights[j + 1], weights[j + 2], weights[j + 3], weights[j + 4]
        row = first + j
        for k in range(arms):
            acc = buffer[k] + w0 * design[instance, row, k]
            acc = acc + w1 * design[instance, row + 1, k]
            acc = acc + w2 * design[instance, row + 2, k]
            acc = acc + w3 * design[instance, row + 3, k]
            buffer[k] = acc + w4 * design[instance, row + 4, k]
        j += 5
    while j < count:
        w = weights[j]
        for k in range(arms):
            buffer[k] = buffer[k] + w * design[instance, first + j, k]
        j += 1


@_compiled()
def _score(mean_weights, width_weights, design, instance, means, widths):
    """⟨φ_k, θ̂⟩ and ‖φ_k‖²_{V⁻¹} of every arm in the index dtype (the NumPy path's ``weights @ design``)."""
    _accumulate(mean_weights, design, instance, 0, means)
    _accumulate(width_weights, design, instance, mean_weights.shape[0], widths)


@_compiled()
def _ucb_arm(means, widths, beta, zero, index):
    """argmax of ``mean + β √max(width, 0)`` (float64, as NumPy promotes; the square root in the index
    dtype); lowest index on ties, the first NaN if any (as ``np.argmax``)."""
    arms = means.shape[0]
    for k in range(arms):
        width = widths[k]
        if width < zero:  # zero of the index dtype, so that the square root stays in it
            width = zero
        index[k] = np.float64(means[k]) + beta * np.float64(np.sqrt(width))
    best_arm, best = 0, index[0]
    for k in range(arms):
        value = index[k]
        if value != value:
            return k
        if value > best:
            best_arm, best = k, value
    return best_arm


@_compiled()
def _choose(start, stop, betas, draws, offset, rewards_model, arms, model, scratch, batch_gaps, batch_arms):
    """One batch's arms and gaps (the same in each of its rounds), its rewards and every run's sum of its
    users' statistics ``(φy, upper(φφᵀ))``."""
    reward_model, noise_std, block, zero = rewards_model
    design, arm_means, best_means, features, outer = arms
    mean_weights, width_weights, rewards, statistics = model[0], model[1], model[2], model[3]
    means_buffer, widths_buffer, index_buffer = scratch[0], scratch[1], scratch[2]
    runs, d, q = mean_weights.shape[0], mean_weights.shape[1], width_weights.shape[1]
    users, arm_count = stop - start, arm_means.shape[1]
    for r in range(runs):
        instance = r % block
        _score(mean_weights[r], width_weights[r], design, instance, means_buffer, widths_buffer)
        arm = _ucb_arm(means_buffer[:arm_count], widths_buffer[:arm_count], betas[r], zero, index_buffer)
        mean = arm_means[instance, arm]
        batch_gaps[r] = best_means[instance] - mean
        batch_arms[r] = arm
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
def _publish(stop, kinds, levels, block, local_noise, tree_values, tree_cursor, external, model, scratch):
    """Add the batch to every run's sum with its privatizer's noise, solve ``V θ̂ = u`` and load the
    scoring weights (θ̂, upper(V⁻¹)) for the next batch.  Returns whether some noisy run's V was not
    positive definite (flagged in ``suspect``; the caller repairs those runs before the next batch)."""
    mean_weights, width_weights, _, statistics, total, noisy, node_noise, node_ids = model[:8]
    lam, noisy_rows, suspect, upper_rows, upper_cols, symmetric = model[8:]
    work, row, prefix, part = scratch[3], scratch[4], scratch[5], scratch[6]
    batch_work, batch_row, positive = scratch[7], scratch[8], scratch[9]
    size, d, q = total.shape[1], mean_weights.shape[1], width_weights.shape[1]
    for g in range(kinds.shape[0]):  # tree: refresh the nodes whose dyadic block starts now
        if kinds[g] == TREE:
            leaf = (stop + levels[g, 1] - 1) // levels[g, 1]  # batches released: the tree's leaf index
            count = 0
            for level in range(levels[g, 0]):
                if (leaf >> level) != node_ids[g, level]:
                    count += 1
            for level in range(count):
                for b in range(block):
                    for p in range(size):
                        node_noise[g, level, b, p] = tree_values[tree_cursor[g]]
                        tree_cursor[g] += 1
            for level in range(levels[g, 0]):
                node_ids[g, level] = leaf >> level
    repairs = False
    for g in range(kinds.shape[0]):
        kind = kinds[g]
        for b in range(block):
            r = g * block + b
            if kind == EXACT:
                for p in range(size):
                    total[r, p] += statistics[r, p]
                    noisy[r, p] = total[r, p]
            elif kind == LOCAL:
                for p in range(size):
                    total[r, p] += statistics[r, p] + local_noise[r, p]
                    noisy[r, p] = total[r, p]
            elif kind == TREE:  # the prefix's nodes summed in groups of four levels (gemv's order)
                for p in range(size):
                    total[r, p] += statistics[r, p]
                    prefix[p] = 0.0
                leaf = (stop + levels[g, 1] - 1) // levels[g, 1]
                for first in range(0, levels[g, 0], 4):
                    for p in range(size):
                        part[p] = 0.0
                    for level in range(first, min(first + 4, levels[g, 0])):
                        if (leaf >> level) & 1:
                            for p in range(size):
                                part[p] = part[p] + node_noise[g, level, b, p]
                    for p in range(size):
                        prefix[p] = prefix[p] + part[p]
                for p in range(size):
                    noisy[r, p] = total[r, p] + prefix[p]
            else:
                for p in range(size):
                    noisy[r, p] = external[r, p]
            for i in range(d):
                for j in range(d):
                    batch_work[i, j, r] = noisy[r, d + symmetric[i * d + j]] + (lam[r] if i == j else 0.0)
                    batch_work[i, d + j, r] = 1.0 if i == j else 0.0
                batch_work[i, 2 * d, r] = noisy[r, i]
    _eliminate_runs(batch_work, batch_row, positive, d)
    for r in range(total.shape[0]):
        if not positive[r]:  # a pivot not positive and finite: the full elimination, entry for entry
            _load(noisy[r], lam[r], symmetric, work)
            if not _eliminate_all(work, row, d) and noisy_rows[r]:
                suspect[r] = True
                repairs = True
                continue
            batch_work[:, :, r] = work
        for i in range(d):
            mean_weights[r, i] = batch_work[i, 2 * d, r]
        for j in range(q):
            width_weights[r, j] = batch_work[upper_rows[j], d + upper_cols[j], r]
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
def _run_chunk(first, bounds, betas, draws, rewards_model, kinds, levels, local_noise, tree_values,
               tree_cursor, arms, model, scratch, chunk_gaps, chunk_arms):  # fmt: skip
    """Batches ``first ..`` of a chunk whose releases are all charged already; returns the batch after
    which some runs need :func:`_repair` (−1 when the chunk is done)."""
    block = rewards_model[2]
    runs = chunk_gaps.shape[1]
    for c in range(first, bounds.shape[0] - 1):
        start, stop = bounds[c], bounds[c + 1]
        offset = runs * (start - bounds[0])
        _choose(start, stop, betas[c], draws, offset, rewards_model, arms, model, scratch, chunk_gaps[c],
                chunk_arms[c])  # fmt: skip
        if _publish(stop, kinds, levels, block, local_noise[c], tree_values, tree_cursor, local_noise[c],
                    model, scratch):  # fmt: skip
            return c
    return -1


# ----------------------------------------------------------------------------- the driver
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
    arm scores ``(instances, d + q, K)`` in the index dtype; ``lam``, ``floor``, ``noisy_rows`` per run;
    ``beta_at(t)`` the radius after t rounds.  Fills ``gaps``, ``actions`` and ``clips``; returns the
    number of batches and the final radius.
    """
    from dpcert.bandits.algorithms import (
        linucb as engine,  # the aggregators' classes (linucb imports this module)
    )

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
    kind_of = {engine._ExactSum: EXACT, engine._LocalGaussianSum: LOCAL, engine._TreeSum: TREE}
    kinds = np.array([kind_of.get(type(a), OPAQUE) for _, a, _ in blocks], dtype=np.int64)
    # per block: the tree's levels and its rounds per leaf (the batch size), (0, 1) for other kinds
    levels = np.array(
        [(a.levels, a.leaf) if isinstance(a, engine._TreeSum) else (0, 1) for _, a, _ in blocks],
        dtype=np.int64,
    ).reshape(len(blocks), 2)
    node_noise = np.zeros((len(blocks), max(1, int(levels[:, 0].max())), block, size))
    node_ids = np.full(node_noise.shape[:2], -1, dtype=np.int64)
    mean_weights = np.zeros((runs, d), dtype=design.dtype)
    width_weights = np.zeros((runs, q), dtype=design.dtype)
    width_weights[:, upper_rows == upper_cols] = (1.0 / lam)[:, None]  # V₀⁻¹ = I/λ
    suspect = np.zeros(runs, dtype=np.bool_)
    symmetric = np.ascontiguousarray(engine._symmetric_index(d), dtype=np.int64)
    model = (
        mean_weights, width_weights, np.zeros((runs, batch_size)), np.zeros((runs, size)),
        np.zeros((runs, size)), np.zeros((runs, size)), node_noise, node_ids,
        np.ascontiguousarray(lam, dtype=np.float64), np.ascontiguousarray(noisy_rows, dtype=np.bool_),
        suspect, upper_rows, upper_cols, symmetric,
    )  # fmt: skip
    noisy = model[5]
    arm_count = padded.shape[2]
    scratch = (
        np.empty(arm_count, dtype=design.dtype), np.empty(arm_count, dtype=design.dtype),
        np.empty(arm_count), np.empty((d, 2 * d + 1)), np.empty(2 * d + 1), np.empty(size), np.empty(size),
        np.empty((d, 2 * d + 1, runs)), np.empty((2 * d + 1, runs)), np.empty(runs, dtype=np.bool_),
    )  # fmt: skip
    reward_model = BERNOULLI if env.reward == "bernoulli" else GAUSSIAN
    rewards_model = (reward_model, float(env.noise_std), block, design.dtype.type(0))
    starts = list(range(0, horizon, batch_size)) + [horizon]
    opaque = bool((kinds == OPAQUE).any())
    per_chunk = 1 if opaque else max(1, CHUNK_VALUES // (runs * size))
    tree_ids = node_ids.copy()  # the driver's copy of the tree schedule: how many values each batch draws
    for first in range(0, len(starts) - 1, per_chunk):
        bounds = np.array(starts[first : first + per_chunk + 1], dtype=np.int64)
        users = np.diff(bounds)
        if before_release is not None:  # every release of the chunk is charged before its noise exists
            for start, count in zip(bounds[:-1].tolist(), users.tolist(), strict=True):
                before_release(start // batch_size, count)
        betas = np.ascontiguousarray(np.stack([beta_at(int(s)) for s in bounds[:-1]]), dtype=np.float64)
        total_draws = runs * int(users.sum())
        draws = rng.random(total_draws) if reward_model == BERNOULLI else rng.standard_normal(total_draws)
        local_noise, tree_values, tree_cursor = _draw_noise(
            blocks, kinds, levels, bounds, tree_ids, size, engine
        )
        chunk_gaps, chunk_arms = np.empty((users.size, runs)), np.empty((users.size, runs), dtype=np.int64)
        if opaque:  # one batch: the privatizers' own releases between the compiled steps
            start, stop = int(bounds[0]), int(bounds[1])
            _choose(start, stop, betas[0], draws, 0, rewards_model, arms, model, scratch, chunk_gaps[0],
                    chunk_arms[0])  # fmt: skip
            external = np.zeros((runs, size))
            for g, (rows, aggregator, stream) in enumerate(blocks):
                if kinds[g] == OPAQUE:
                    arm = chunk_arms[0, rows]
                    chosen, chosen_outer = features[np.arange(block), arm], outer[np.arange(block), arm]
                    statistics = np.concatenate(
                        [
                            chosen[:, None, :] * model[2][rows, : stop - start, None],
                            np.broadcast_to(chosen_outer[:, None, :], (block, stop - start, q)),
                        ],
                        axis=-1,
                    )
                    external[rows] = aggregator.add_batch(statistics, stop, stream)
            if _publish(stop, kinds, levels, block, local_noise[0], tree_values, tree_cursor, external,
                        model, scratch):  # fmt: skip
                _repair(suspect, noisy, lam, floor, clips, mean_weights, width_weights, d, symmetric)
        else:
            resume = 0
            while resume >= 0:
                stopped = _run_chunk(
                    resume, bounds, betas, draws, rewards_model, kinds, levels, local_noise, tree_values,
                    tree_cursor, arms, model, scratch, chunk_gaps, chunk_arms,
                )  # fmt: skip
                if stopped >= 0:
                    _repair(suspect, noisy, lam, floor, clips, mean_weights, width_weights, d, symmetric)
                    stopped += 1
                resume = stopped if 0 < stopped < users.size else -1
        gaps[:, bounds[0] : bounds[-1]] = np.repeat(chunk_gaps.T, users, axis=1)
        actions[:, bounds[0] : bounds[-1]] = np.repeat(chunk_arms.T, users, axis=1)
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
    path's ``_solve_with_safety_net`` on them (eigenvalues clipped at the floor, post-processing of
    the published V, privacy-neutral; each clip counted), then their scoring weights."""
    rows = np.flatnonzero(suspect)
    gram = noisy[rows][:, d + symmetric].reshape(-1, d, d) + lam[rows, None, None] * np.eye(d)
    values, vectors = np.linalg.eigh(gram)
    bad = values.min(axis=1) <= 0.0
    clips[rows] += bad
    values = np.where(bad[:, None], np.maximum(values, floor[rows, None]), values)
    repaired = np.einsum("rij,rj,rkj->rik", vectors, values, vectors)
    inverse = np.linalg.inv(repaired)
    theta = np.linalg.solve(repaired, noisy[rows, :d][:, :, None])[:, :, 0]
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
    engine: Any,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The noise of a chunk's releases (all charged), from each privatizer's stream in the NumPy path's
    order: local Gaussian sums ``N(0, users σ²)`` per batch, and the tree's new node values."""
    chunk, runs = bounds.size - 1, sum(rows.stop - rows.start for rows, _, _ in blocks)
    users = np.diff(bounds)
    local_noise = np.zeros((chunk, runs, size))
    tree_parts, tree_cursor, offset = [], np.zeros(len(blocks), dtype=np.int64), 0
    for g, (rows, aggregator, stream) in enumerate(blocks):
        if kinds[g] == LOCAL:
            aggregator.pool = engine._pool(aggregator.pool, stream)
            scale = np.array([aggregator.sigma * math.sqrt(n) for n in users.tolist()])
            values = aggregator.pool.standard_normal((chunk, rows.stop - rows.start, size))
            local_noise[:, rows] = values * scale[:, None, None]
        elif kinds[g] == TREE:
            leaves = -(-bounds[1:, None] // levels[g, 1])  # batches released: the tree's leaf index
            ids = leaves >> np.arange(levels[g, 0])
            previous = np.vstack([tree_ids[g, None, : levels[g, 0]], ids[:-1]])
            count = int((ids != previous).sum())
            tree_ids[g, : levels[g, 0]] = ids[-1]
            aggregator.pool = engine._pool(aggregator.pool, stream)
            tree_parts.append(
                aggregator.sigma * aggregator.pool.standard_normal((count * (rows.stop - rows.start) * size,))
            )
            tree_cursor[g] = offset
            offset += tree_parts[-1].size
    tree_values = np.concatenate(tree_parts) if tree_parts else np.zeros(0)
    return local_noise, tree_values, tree_cursor
