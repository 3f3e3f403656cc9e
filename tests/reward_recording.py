"""A multi-armed bandit that records the generator's state after each draw of rewards.

A refused charge must come after the batch's rewards (the users' data) and before its noise: with this
bandit, the state at the refusal is compared with the state right after the first draw of rewards.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from dpcert.bandits.environments.mab import MultiArmedBandit


@dataclass(frozen=True)
class RewardRecordingBandit(MultiArmedBandit):
    states: list[str] = field(default_factory=list, compare=False, repr=False)

    def reward_sums(self, arms: np.ndarray, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        sums = super().reward_sums(arms, counts, rng)
        self.states.append(json.dumps(rng.bit_generator.state))
        return sums
