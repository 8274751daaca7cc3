"""pytest-legaleval: LLM evaluations where every dataset record is a pytest test."""

from __future__ import annotations

from pytest_legaleval.records import Attachment, Choice, Criterion, Message, Record, SourceRef

__all__ = ["Attachment", "Choice", "Criterion", "Message", "Record", "SourceRef", "__version__"]

__version__ = "0.1.0"
