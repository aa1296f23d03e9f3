"""``python -m vthread``: the ``vthread`` command."""

import sys

from vthread._cli_main import main

sys.exit(main())
