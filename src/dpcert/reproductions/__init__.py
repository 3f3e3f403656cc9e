"""Figure reproductions behind ``dpcert reproduce``, one module per paper.

:mod:`.dpdpe` (Li, Zhou & Ji 2022), :mod:`.mab` (Tenenbaum et al. 2021), :mod:`.linucb` (Chowdhury &
Zhou 2022), :mod:`.robust_elimination` (Charisopoulos, Esfandiari & Mirrokni 2023) and :mod:`.ldp_linear`
(Improved-rate LDP linear bandits).
"""
