"""``python -m dpcert``: the ``dpcert`` command."""

import sys

from dpcert.cli import main

sys.exit(main())
