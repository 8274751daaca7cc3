"""One exception tree for pytest-legaleval.

Every exception class the package defines derives from :class:`LegalEvalError`, and every
warning class from :class:`LegalEvalWarning`, so ``except LegalEvalError`` catches all of
ours and ``-W error::pytest_legaleval.errors.LegalEvalWarning`` turns all of our warnings
into errors (deprecations keep Python's own ``DeprecationWarning``). User-facing errors
also inherit the matching builtin, so callers that only know ``ValueError`` still catch
them. pytest's own ``UsageError`` and test outcomes (the ``pytest.fail`` exceptions of
``pytest/outcomes.py``) are pytest's and stay outside. The private classes are control
flow inside one module, and the mock server's is test tooling; they are in the tree all
the same, so the rule has no exception. ``tests/unit/test_error_tree.py`` walks the
package and holds this.

The tree (``module: Class(bases)``; a leading ``_`` is private to its module)::

    LegalEvalError(Exception)
    ├── ConfigError(ValueError)                    a bad option or file; names the fix
    │   ├── datasets.builder: BuildFailed
    │   ├── datasets.review.desk: ReviewRefused    a label the review cannot take (4xx)
    │   ├── importers.convert: ConversionFailed
    │   ├── metrics._rundir_check: RunDirectoryError   a run directory that cannot be trusted
    │   ├── run.merge: MergeError
    │   └── service.documents: NotUploadable
    ├── ResponsesError(ValueError)                 a --responses file that cannot be read
    ├── DatasetRejected(ValueError)                the contract's 400/413 dataset failure
    │   └── validation.record_error: AllRecordsRejected
    ├── NonFiniteNumber(ValueError)                NaN/Infinity where JSON allows none
    ├── InvalidValue(ValueError)                   an argument or value a function cannot use
    ├── InvalidType(TypeError)                     an argument of a type a function cannot use
    ├── UnknownName(KeyError)                      a name no table holds (a schema, a key)
    ├── UnknownAttribute(AttributeError)           a name a package face does not export
    ├── InvalidState(RuntimeError)                 a call out of order (a closed engine)
    ├── util.paths: PathRefused(ValueError)        a path outside its allowed folder
    ├── importers.base: RowError(ValueError)       one source row that cannot be a record
    ├── grading.official.legalbench: OfficialScoringError(ValueError)
    ├── grading.official.prbench: PrbenchScoringError(ValueError)   a rubric PRBench cannot score
    ├── grading.official.apex: ApexReplyError(ValueError)   a reply or rubric APEX cannot read
    ├── engine.local_server: LocalModelError(RuntimeError)
    ├── engine.retry: ProviderError                a classified model-endpoint failure
    ├── service.storage: StorageError(OSError)     the data directory cannot be written
    │   ├── StorageFull
    │   └── StorageBusy
    │       └── DatabaseUnavailable                PostgreSQL unreachable too long
    ├── service.http: ApiError                     an HTTP answer with the error envelope
    │   └── BodyDeadline                           a request body too slow to arrive (408)
    ├── service.client: ServiceError               an answer `legaleval submit` did not expect
    ├── cli.submit: _Exit                          ends `submit` with an exit code
    ├── util.safe_yaml: _TooLarge                  an alias bomb, before it is built
    ├── grading._base: _Suspended(RuntimeError)     an inline grader that awaited
    ├── importers.xlsx_package: _Refused           a DTD inside an XLSX part
    └── testing.mock_openai.hostile_server: _BadRequest   (test tooling, kept in the tree)

    LegalEvalWarning(UserWarning)
    ├── NonFiniteWarning                           a NaN/Infinity written as null
    ├── pipeline.responses: ResponsesWarning       rows of a responses file left unused
    └── grading._policies: PolicyWarning            a record named an unknown policy
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "ConfigError",
    "DatasetRejected",
    "InvalidState",
    "InvalidType",
    "InvalidValue",
    "LegalEvalError",
    "LegalEvalWarning",
    "NonFiniteNumber",
    "NonFiniteWarning",
    "ResponsesError",
    "UnknownAttribute",
    "UnknownName",
]


class LegalEvalError(Exception):
    """Base class of every error raised by pytest-legaleval."""


class ConfigError(LegalEvalError, ValueError):
    """An impossible or malformed configuration; the message names the fix."""


class ResponsesError(LegalEvalError, ValueError):
    """A responses file that cannot be read at all (a bad row is reported per record)."""


class NonFiniteNumber(LegalEvalError, ValueError):
    """``NaN``, ``Infinity`` or a number beyond a double's range where JSON allows none.

    Standard JSON has no such number: a judge reply, a responses row or a verdict file
    that holds one is refused with this (see ``util.strict_json``).
    """


class InvalidValue(LegalEvalError, ValueError):
    """An argument or value a function cannot use (a programming or data error).

    A ``ValueError`` too, so callers that catch the builtin (``argparse`` type converters,
    ``except ValueError``) keep working.
    """


class InvalidType(LegalEvalError, TypeError):
    """An argument of a type a function cannot use (a ``TypeError`` too)."""


class UnknownName(LegalEvalError, KeyError):
    """A name no table holds: a schema, a column, a key (a ``KeyError`` too)."""


class UnknownAttribute(LegalEvalError, AttributeError):
    """A name a package face does not export (PEP 562 ``__getattr__``; ``hasattr`` works)."""


class InvalidState(LegalEvalError, RuntimeError):
    """A call out of order: a closed engine, a finalized run directory, a server not started.

    A ``RuntimeError`` too.
    """


class LegalEvalWarning(UserWarning):
    """Base class of every warning issued by pytest-legaleval."""


class NonFiniteWarning(LegalEvalWarning):
    """A non-finite number reached an artifact writer and was written as ``null``."""


class DatasetRejected(LegalEvalError, ValueError):
    """A dataset-level failure of the Dataset Contract (HTTP 400 or 413; no run is created).

    Attributes:
        status: the HTTP status the contract assigns (400 or 413).
        code: ``invalid_request`` or ``payload_too_large``.
        message: human-readable reason.
        details: extra JSON-safe details for the envelope.

    """

    def __init__(
        self,
        message: str,
        *,
        code: str = "invalid_request",
        status: int = 400,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = dict(details or {})

    def envelope(self, request_id: str) -> dict[str, Any]:
        """The contract's standard error envelope for this failure."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            error["details"] = self.details
        return {"error": error, "request_id": request_id}

    def envelope_json(self, request_id: str) -> str:
        """The envelope as indented JSON text."""
        return json.dumps(self.envelope(request_id), indent=2, ensure_ascii=False)
