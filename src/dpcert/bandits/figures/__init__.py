"""Figure reproductions behind ``dpcert reproduce``, one module per paper.

:mod:`.dpdpe` (Li, Zhou & Ji 2022), :mod:`.mab` (Tenenbaum et al. 2021), :mod:`.linucb` (Chowdhury &
Zhou 2022), :mod:`.robust_elimination` (seed 003) and :mod:`.ldp_linear` (seed 004).
"""
