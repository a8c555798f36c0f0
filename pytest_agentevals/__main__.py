"""`python -m pytest_agentevals` is the `agentevals` command."""

import sys

from .cli import main

sys.exit(main())
