"""``python -m vthread``: the ``vthread`` command."""

import sys

from vthread.cli import main

sys.exit(main())
