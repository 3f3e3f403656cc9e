"""Noise choices of the bandit families: the papers' calibrations (``paper``) and tight ones (``tight``).

:mod:`.gaussian` holds the papers' shared Gaussian formula and the certificate a noise level earns;
:mod:`.elimination`, :mod:`.linucb` and :mod:`.ldp_linear` calibrate one family each.
"""
