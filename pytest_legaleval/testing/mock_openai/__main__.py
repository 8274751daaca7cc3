"""``python -m pytest_legaleval.testing.mock_openai``: serve a mock endpoint until stopped."""

from __future__ import annotations

import sys

from pytest_legaleval.testing.mock_openai.cli import main

if __name__ == "__main__":
    sys.exit(main())
