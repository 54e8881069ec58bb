"""`python -m localcluster up|down|status|build`, the same commands as `karpy cluster ...`."""

import sys

from localcluster.cli import main

sys.exit(main())
