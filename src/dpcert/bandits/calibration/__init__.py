"""Noise choices of the bandit families: the papers' calibrations (``paper``) and tight ones (``tight``).

:mod:`.common` holds the papers' shared Gaussian formula, the certificate a noise level earns and
:func:`~.common.with_notes`;
:mod:`.elimination`, :mod:`.linucb` and :mod:`.ldp_linear` calibrate one family each.
"""
