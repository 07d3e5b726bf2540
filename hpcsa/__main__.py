"""``python -m hpcsa`` is the same as the ``hpcsa`` command."""

import sys

from hpcsa.cli import main

sys.exit(main())
