"""``python -m polydyn`` is the ``polydyn`` command."""

import sys

from .cli import main

sys.exit(main())
