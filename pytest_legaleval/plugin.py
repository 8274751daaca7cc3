"""pytest hooks of pytest-legaleval (work in progress)."""
