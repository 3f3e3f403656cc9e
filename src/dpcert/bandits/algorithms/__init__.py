"""Bandit engines, one module per paper family; each releases user data only through a privacy session.

* :mod:`.elimination` — DPE / DP-DPE / DPE-FixedU / DP-PE (Li, Zhou & Ji 2022).
* :mod:`.mab` — SDP-AE, VB-SDP-AE and the eliminations they are compared with (Tenenbaum et al. 2021).
* :mod:`.robust_elimination` — robust locally private batched elimination, with :mod:`.spectral_filter`
  (its robust estimate) and :mod:`.corruption` (in-range adversaries).
* :mod:`.linucb` — the batched LinUCB family of Chowdhury & Zhou 2022.
* :mod:`.ldp_linear` — the Improved-rate LDP linear bandits, with :mod:`.maler` (their online learner).
"""
