"""Bandit environments: finite-arm and contextual linear bandits, multi-armed bandits, user populations.

One module per family (``linear``, ``contextual``, ``mab``); each vectorises over repetitions.
"""
