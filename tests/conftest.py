"""Test-suite settings: property tests are derandomized, so every run checks the same examples.

Set ``HYPOTHESIS_PROFILE=explore`` to let hypothesis draw fresh examples (e.g. when hunting for bugs).
"""

import os

from hypothesis import settings

settings.register_profile("default-derandomized", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default-derandomized"))
