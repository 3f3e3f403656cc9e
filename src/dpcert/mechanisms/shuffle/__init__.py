"""Shuffle-model protocols: the bit-sum protocols and shuffled local randomizers."""
