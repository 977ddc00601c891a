"""``python -m companion`` is the ``companion`` command (also for ``torchrun -m companion``)."""

import sys

from companion.cli import main

sys.exit(main())
