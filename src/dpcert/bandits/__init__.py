"""Private bandit algorithms assembled from certified mechanisms, with per-user accounting.

Importing the package registers every algorithm of :mod:`dpcert.bandits.runner` in
:mod:`dpcert.bandits.registry`.
"""

from dpcert.bandits import runner

__all__ = ["runner"]
