"""Privacy mathematics only.

Privacy-loss distributions with proven round-off, RDP, zCDP, binomial sums and amplification.
"""
