"""A session's check that no user was charged twice, over charges recorded in each of their forms.

``charge_range`` records two ints, ``charge`` and ``charge_ranges`` arrays of range ends; the check must
agree with counting every user's charges directly (``charges_per_user``), whatever the mix.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpcert.mechanisms.gaussian import gaussian_certificate
from dpcert.session import PrivacySession


@pytest.mark.parametrize("overlap", [None, "range", "ids", "ranges"])
def test_each_user_once_agrees_with_direct_counts_for_every_charge_form(overlap):
    certificate = gaussian_certificate(2.0, delta=1e-6)
    session = PrivacySession("s")
    session.charge_range(0, 10, certificate)  # ids 0..9
    session.charge([10, 11, 15], certificate)  # two ranges: 10..11, 15
    session.charge_ranges([20, 30], 5, certificate)  # 20..24, 30..34
    session.charge_range(40, 3, certificate)  # 40..42
    if overlap == "range":
        session.charge_range(9, 2, certificate)  # 9 and 10 again
    elif overlap == "ids":
        session.charge([42], certificate)
    elif overlap == "ranges":
        session.charge_ranges([12, 33], 2, certificate)  # 12..13 new, 33..34 again
    _, counts = session.charges_per_user()
    assert session.max_charges_per_user() == int(counts.max()) == (1 if overlap is None else 2)
    assert session.worst_user_certificate(1e-6) is not None
    expected_intervals = 4 if overlap is None else 5
    assert len(session.intervals) == expected_intervals
    assert np.array_equal(session._interval_ends(0)[:2], [0, 10])
