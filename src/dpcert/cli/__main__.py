import sys

from dpcert.cli import main

sys.exit(main())
