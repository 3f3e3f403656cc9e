"""Test-suite settings: property tests are derandomized, so every run checks the same examples.

Set ``HYPOTHESIS_PROFILE=explore`` to let hypothesis draw fresh examples (e.g. when hunting for bugs).
"""

import contextlib
import os
import signal
from collections.abc import Iterator

from hypothesis import settings

settings.register_profile("default-derandomized", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default-derandomized"))


class RanTooLong(BaseException):
    """Raised by :func:`time_limit`'s alarm: not an ``Exception``, so no error mapping can hide it."""


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Raise :class:`RanTooLong` in the main thread if the block still runs after ``seconds``."""

    def expire(signum: int, frame: object) -> None:
        raise RanTooLong(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
