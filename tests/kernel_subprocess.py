"""Running a script under other OpenBLAS kernels (and numpy SIMD settings), one interpreter each: OpenBLAS
picks its kernel and numpy its loops when they load, so each setting needs its own process."""

from __future__ import annotations

import json
import os
import subprocess

KERNELS = (None, "Haswell", "Sandybridge")
# numpy's own SIMD loops (exp and log among them) are chosen by CPU feature at start-up; turning the
# AVX-512 ones off imitates an AVX2 machine for numpy as Haswell does for OpenBLAS
NO_AVX512 = "AVX512F AVX512CD AVX512VL AVX512BW AVX512DQ AVX512VNNI AVX512_SKX AVX512_CLX AVX512_ICL X86_V4"


def environment(kernel: str | None, numpy_features: str | None = None) -> dict[str, str]:
    """This process's environment with ``OPENBLAS_CORETYPE`` set to ``kernel`` (unset for None) and
    ``NPY_DISABLE_CPU_FEATURES`` to ``numpy_features`` (unset for None)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES")}
    if kernel is not None:
        env["OPENBLAS_CORETYPE"] = kernel
    if numpy_features is not None:
        env["NPY_DISABLE_CPU_FEATURES"] = numpy_features
    return env


def run_json(jobs: list[tuple[list[str], dict[str, str]]], timeout: float = 600) -> list[dict]:
    """Start every ``(argv, environment)`` job at once; the JSON object each printed on its last line."""
    processes = [
        subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for argv, env in jobs
    ]
    results = []
    for process in processes:
        stdout, stderr = process.communicate(timeout=timeout)
        assert process.returncode == 0, stderr[-2000:]
        results.append(json.loads(stdout.strip().splitlines()[-1]))
    return results
