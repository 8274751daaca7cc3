"""Validation: schema loading, the contract's rules and the ``RecordError`` format.

The JSON Schemas in ``schemas/`` are the single source of truth for shapes, types, enums
and lengths; :mod:`~pytest_legaleval.validation.checks` holds what a schema cannot say
(text encoding, byte sizes, depth, hashes). Every record-level problem comes out as a
:class:`RecordError` in the Dataset Contract's ``record_errors`` shape.
"""

from __future__ import annotations

from pytest_legaleval.validation.checks import check_text, record_sha256
from pytest_legaleval.validation.contract import (
    MAX_DATASET_METADATA_BYTES,
    MAX_METADATA_DEPTH,
    MAX_PAYLOAD_BYTES,
    MAX_RECORD_BYTES,
    MAX_RECORD_METADATA_BYTES,
    MAX_RECORDS,
    check_contract_document,
    check_contract_record,
    check_payload_size,
    validate_contract_document,
    validate_contract_record,
)
from pytest_legaleval.validation.legal_eval import check_legal_eval_row, validate_legal_eval_row
from pytest_legaleval.validation.record_error import ERROR_CODES, AllRecordsRejected, RecordError
from pytest_legaleval.validation.schemas import load_schema, schema_names, schema_validator

__all__ = [
    "ERROR_CODES",
    "MAX_DATASET_METADATA_BYTES",
    "MAX_METADATA_DEPTH",
    "MAX_PAYLOAD_BYTES",
    "MAX_RECORDS",
    "MAX_RECORD_BYTES",
    "MAX_RECORD_METADATA_BYTES",
    "AllRecordsRejected",
    "RecordError",
    "check_contract_document",
    "check_contract_record",
    "check_legal_eval_row",
    "check_payload_size",
    "check_text",
    "load_schema",
    "record_sha256",
    "schema_names",
    "schema_validator",
    "validate_contract_document",
    "validate_contract_record",
    "validate_legal_eval_row",
]
