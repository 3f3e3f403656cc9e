"""Accounting: calibration, composition, amplification and the per-user ledger."""
