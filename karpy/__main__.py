"""`python -m karpy …` — the same program as the `karpy` script."""

import sys

from karpy.cli import main

sys.exit(main())
