"""``python -m pytest_legaleval.cli``: the ``legaleval`` command."""

import sys

from pytest_legaleval.cli import main

sys.exit(main())
