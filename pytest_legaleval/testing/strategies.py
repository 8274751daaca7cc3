"""Hypothesis strategies for datasets (valid rows, records, documents, mutations) and replies.

The hostile endpoint replies (``completion_bodies``, ``hostile_bodies``,
``hostile_responses`` …) live in :mod:`._reply_strategies` and are re-exported here.

Every strategy is public and composable, and draws reprs such as
``legal_eval_rows(task_type='mcq')``. Generated text is NFC and free of U+0000 and
surrogates, so every value the valid strategies produce passes validation;
:func:`legal_eval_mutations` and :func:`contract_record_mutations` break exactly one field
and say which error that must produce.

Example::

    @given(legal_eval_mutations())
    def test_one_error(mutation):
        errors = validate_legal_eval_row(mutation.row, 0)
        assert [(e.code, e.path) for e in errors] == [(mutation.code, mutation.path)]
"""

from __future__ import annotations

import copy
import unicodedata
from datetime import UTC, datetime
from typing import Any, NamedTuple

from hypothesis import strategies as st

from pytest_legaleval.errors import InvalidValue
from pytest_legaleval.testing._reply_strategies import (
    completion_bodies,
    hostile_bodies,
    hostile_reply_text,
    hostile_responses,
    token_counts,
    usage_blocks,
)
from pytest_legaleval.validation.checks import format_path

__all__ = [
    "CONTRACT_CRITERIA",
    "LEGAL_EVAL_TASK_TYPES",
    "Mutation",
    "clean_text",
    "completion_bodies",
    "contract_documents",
    "contract_record_mutations",
    "contract_records",
    "hostile_bodies",
    "hostile_reply_text",
    "hostile_responses",
    "hostile_text",
    "json_values",
    "legal_eval_mutations",
    "legal_eval_rows",
    "token_counts",
    "usage_blocks",
]

LEGAL_EVAL_TASK_TYPES = ("mcq", "reference_qa", "rubric_qa")
CONTRACT_CRITERIA = ("accuracy", "clarity", "reasoning", "factuality", "overall")

_CLEAN_CHARS = st.characters(codec="utf-8", exclude_characters="\x00")


def clean_text(min_size: int = 0, max_size: int = 40) -> st.SearchStrategy[str]:
    """Text that satisfies the encoding rules: NFC, no U+0000, no surrogates.

    Lengths count code points after NFC normalization (which may change them).
    """
    return (
        st.text(_CLEAN_CHARS, min_size=min_size, max_size=max_size)
        .map(lambda text: unicodedata.normalize("NFC", text))
        .filter(lambda text: min_size <= len(text) <= max_size)
    )


def hostile_text(max_size: int = 20) -> st.SearchStrategy[str]:
    """Text that may break every encoding rule: U+0000, lone surrogates, non-NFC sequences."""
    nasty = st.sampled_from(["\x00", "\ud800", "\udfff", "e\u0301", "\u212b", "\ufeff"])
    return st.lists(st.text(max_size=5) | nasty, max_size=max_size).map("".join)


def json_values(
    text: st.SearchStrategy[str] | None = None, *, max_leaves: int = 20
) -> st.SearchStrategy[Any]:
    """Arbitrary JSON values (``None``, booleans, numbers, strings, arrays, objects).

    Args:
        text: strategy for strings and keys; defaults to any non-surrogate text. Pass
            :func:`hostile_text` to exercise the encoding rules, :func:`clean_text` for
            values that must be valid.
        max_leaves: bound on the size of one value.

    """
    strings = st.text() if text is None else text
    scalars = (
        st.none()
        | st.booleans()
        | st.integers(min_value=-(2**63), max_value=2**63)
        | st.floats(allow_nan=False, allow_infinity=False)
        | strings
    )
    return st.recursive(
        scalars,
        lambda children: (
            st.lists(children, max_size=4) | st.dictionaries(strings, children, max_size=4)
        ),
        max_leaves=max_leaves,
    )


def _clean_json(max_leaves: int = 8) -> st.SearchStrategy[Any]:
    return json_values(clean_text(max_size=12), max_leaves=max_leaves)


def _metadata() -> st.SearchStrategy[dict[str, Any]]:
    # Shallow (depth <= 3) and small, so contract limits (5 levels, 8 KB) always hold.
    leaf = (
        st.none()
        | st.booleans()
        | st.integers(-1000, 1000)
        | st.floats(allow_nan=False, allow_infinity=False)
        | clean_text(max_size=20)
    )
    inner = st.dictionaries(clean_text(1, 10), leaf, max_size=3) | st.lists(leaf, max_size=3)
    return st.dictionaries(clean_text(1, 12), leaf | inner, max_size=4)


def _unique_labels(count: int) -> st.SearchStrategy[list[str]]:
    return st.lists(clean_text(1, 4), min_size=count, max_size=count, unique=True)


@st.composite
def legal_eval_rows(draw: st.DrawFn, task_type: str | None = None) -> dict[str, Any]:
    """Generate valid ``legal_eval_v1`` rows, of ``task_type`` or any of the three.

    Rows draw random ids: use ``st.lists(legal_eval_rows(), unique_by=lambda r: r["id"])``
    for a file.
    """
    if task_type is not None and task_type not in LEGAL_EVAL_TASK_TYPES:
        raise InvalidValue(f"task_type must be one of {LEGAL_EVAL_TASK_TYPES}, got {task_type!r}")
    kind = task_type or draw(st.sampled_from(LEGAL_EVAL_TASK_TYPES))
    row: dict[str, Any] = {
        "schema_version": "legal_eval_v1",
        "id": draw(clean_text(1, 30)),
        "dataset": draw(clean_text(1, 12)),
        "task_type": kind,
        "prompt": draw(clean_text(1, 200)),
    }
    if draw(st.booleans()):
        row["context"] = draw(clean_text(max_size=100))
    if draw(st.booleans()):
        message = st.fixed_dictionaries(
            {"role": st.sampled_from(["user", "assistant", "system"]), "content": clean_text(1, 60)}
        )
        row["messages"] = draw(st.lists(message, max_size=3))
    if draw(st.booleans()):
        attachment = st.fixed_dictionaries(
            {"path": clean_text(1, 30)},
            optional={"kind": st.sampled_from(["pdf", "image"]), "title": clean_text(max_size=20)},
        )
        row["attachments"] = draw(st.lists(attachment, max_size=2))
    if draw(st.booleans()):
        row["metadata"] = draw(_metadata())
    if kind == "mcq":
        labels = draw(_unique_labels(draw(st.integers(2, 6))))
        row["choices"] = [{"id": label, "text": draw(clean_text(max_size=30))} for label in labels]
        row["correct_choice_ids"] = draw(
            st.lists(st.sampled_from(labels), min_size=1, max_size=len(labels), unique=True)
        )
    elif kind == "reference_qa":
        row["reference_answers"] = draw(st.lists(clean_text(1, 60), min_size=1, max_size=3))
    else:
        ids = draw(_unique_labels(draw(st.integers(1, 5))))
        row["rubric"] = [
            draw(
                st.fixed_dictionaries(
                    {"id": st.just(criterion_id), "title": clean_text(1, 40)},
                    optional={
                        "description": clean_text(max_size=40),
                        "weight": st.floats(-5, 5, allow_nan=False) | st.integers(-5, 5),
                    },
                )
            )
            for criterion_id in ids
        ]
        if draw(st.booleans()):
            row["reference_answers"] = draw(st.lists(clean_text(max_size=40), max_size=2))
    if draw(st.booleans()):
        # Unknown top-level fields are allowed.
        row["x_extra"] = draw(_clean_json(4))
    return row


@st.composite
def contract_records(draw: st.DrawFn) -> dict[str, Any]:
    """Generate valid Dataset Contract v1 records (small: far inside every size limit)."""
    rec: dict[str, Any] = {
        "record_id": draw(clean_text(1, 40)),
        "input": {"prompt": draw(clean_text(1, 200))},
    }
    if draw(st.booleans()):
        rec["input"]["context"] = draw(clean_text(max_size=60))
    if draw(st.booleans()):
        rec["reference"] = {"answer": draw(clean_text(max_size=100))}
    if draw(st.booleans()):
        rec["tags"] = draw(st.lists(clean_text(1, 64), max_size=5))
    if draw(st.booleans()):
        rec["expected"] = draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "max_latency_ms": st.integers(1, 120_000),
                    "required_criteria": st.lists(
                        st.sampled_from(CONTRACT_CRITERIA), max_size=5, unique=True
                    ),
                },
            )
        )
    if draw(st.booleans()):
        rec["metadata"] = draw(_metadata())
    return rec


@st.composite
def contract_documents(
    draw: st.DrawFn, min_records: int = 1, max_records: int = 5
) -> dict[str, Any]:
    """Generate valid Dataset Contract v1 documents with unique record ids."""
    doc: dict[str, Any] = {
        "dataset_id": draw(st.from_regex(r"\A[A-Za-z0-9_.-]{1,40}\Z")),
        "dataset_version": draw(clean_text(1, 64)),
        "schema_version": "1.0",
    }
    if draw(st.booleans()):
        moment = draw(st.datetimes(timezones=st.just(UTC), min_value=datetime(2000, 1, 1)))
        doc["created_at"] = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    if draw(st.booleans()):
        doc["metadata"] = draw(_metadata())
    doc["records"] = draw(
        st.lists(
            contract_records(),
            min_size=min_records,
            max_size=max_records,
            unique_by=lambda rec: rec["record_id"],
        )
    )
    return doc


class Mutation(NamedTuple):
    """A valid value with exactly one field broken, and the one error it must produce."""

    row: dict[str, Any]
    """The broken row or record (validate it at index 0)."""
    code: str
    """The expected error code."""
    path: str
    """The expected error path, for index 0 (``records[0].choices``)."""


def _nfc_breaker(text: str) -> str:
    # "e" + COMBINING ACUTE composes to "é" under NFC, whatever follows.
    return "e\u0301" + text


@st.composite
def legal_eval_mutations(draw: st.DrawFn, task_type: str | None = None) -> Mutation:
    """Break one field of a valid ``legal_eval_v1`` row; pair it with the error it must give."""
    row = copy.deepcopy(draw(legal_eval_rows(task_type)))
    kind = row["task_type"]
    options = [
        "drop_required",
        "prompt_type",
        "empty_prompt",
        "bad_task_type",
        "bad_schema_version",
        "null_byte",
        "surrogate",
        "not_nfc",
        "metadata_type",
    ]
    if row.get("messages"):
        options.append("bad_role")
    options += {
        "mcq": ["one_choice", "no_correct", "unknown_correct", "duplicate_choice", "add_rubric"],
        "reference_qa": ["no_answers", "empty_answer", "add_choices"],
        "rubric_qa": ["empty_rubric", "drop_title", "add_correct", "infinite_weight"],
    }[kind]
    mutation = draw(st.sampled_from(options))
    base = "records[0]"
    if mutation == "drop_required":
        field = draw(st.sampled_from(["schema_version", "id", "dataset", "task_type", "prompt"]))
        del row[field]
        return Mutation(row, "missing_required_field", f"{base}.{field}")
    if mutation == "prompt_type":
        row["prompt"] = draw(st.integers() | st.lists(st.integers(), max_size=2) | st.none())
        return Mutation(row, "invalid_field_type", f"{base}.prompt")
    if mutation == "empty_prompt":
        row["prompt"] = ""
        return Mutation(row, "value_out_of_range", f"{base}.prompt")
    if mutation == "bad_task_type":
        row["task_type"] = draw(st.sampled_from(["essay", "MCQ", "criteria", ""]))
        return Mutation(row, "invalid_enum_value", f"{base}.task_type")
    if mutation == "bad_schema_version":
        row["schema_version"] = draw(st.sampled_from(["legal_eval_v2", "1.0", ""]))
        return Mutation(row, "invalid_enum_value", f"{base}.schema_version")
    if mutation in ("null_byte", "surrogate", "not_nfc"):
        if mutation == "not_nfc":
            row["prompt"] = _nfc_breaker(row["prompt"])
        else:
            row["prompt"] += "\x00" if mutation == "null_byte" else "\ud800"
        return Mutation(row, "invalid_encoding", f"{base}.prompt")
    if mutation == "metadata_type":
        row["metadata"] = draw(st.sampled_from(["policy", 3, [], None]))
        return Mutation(row, "invalid_field_type", f"{base}.metadata")
    if mutation == "bad_role":
        position = draw(st.integers(0, len(row["messages"]) - 1))
        row["messages"][position]["role"] = draw(st.sampled_from(["client", "User", "tool"]))
        return Mutation(row, "invalid_enum_value", f"{base}.messages[{position}].role")
    if mutation == "one_choice":
        row["choices"] = row["choices"][:1]
        row["correct_choice_ids"] = [row["choices"][0]["id"]]
        return Mutation(row, "value_out_of_range", f"{base}.choices")
    if mutation == "no_correct":
        row["correct_choice_ids"] = []
        return Mutation(row, "value_out_of_range", f"{base}.correct_choice_ids")
    if mutation == "unknown_correct":
        position = draw(st.integers(0, len(row["correct_choice_ids"]) - 1))
        row["correct_choice_ids"][position] = "not-a-choice-" + "|".join(
            c["id"] for c in row["choices"]
        )
        return Mutation(row, "invalid_enum_value", f"{base}.correct_choice_ids[{position}]")
    if mutation == "duplicate_choice":
        position = draw(st.integers(1, len(row["choices"]) - 1))
        row["choices"][position]["id"] = row["choices"][0]["id"]
        row["correct_choice_ids"] = [row["choices"][0]["id"]]
        return Mutation(row, "value_out_of_range", f"{base}.choices[{position}].id")
    if mutation == "add_rubric":
        row["rubric"] = [{"id": "c1", "title": "anything"}]
        return Mutation(row, "unsupported_field", f"{base}.rubric")
    if mutation == "no_answers":
        row["reference_answers"] = []
        return Mutation(row, "value_out_of_range", f"{base}.reference_answers")
    if mutation == "empty_answer":
        position = draw(st.integers(0, len(row["reference_answers"]) - 1))
        row["reference_answers"][position] = ""
        return Mutation(row, "value_out_of_range", f"{base}.reference_answers[{position}]")
    if mutation == "add_choices":
        row["choices"] = [{"id": "A", "text": "yes"}, {"id": "B", "text": "no"}]
        return Mutation(row, "unsupported_field", f"{base}.choices")
    if mutation == "empty_rubric":
        row["rubric"] = []
        return Mutation(row, "value_out_of_range", f"{base}.rubric")
    if mutation == "drop_title":
        position = draw(st.integers(0, len(row["rubric"]) - 1))
        del row["rubric"][position]["title"]
        return Mutation(row, "missing_required_field", f"{base}.rubric[{position}].title")
    if mutation == "add_correct":
        row["correct_choice_ids"] = ["A"]
        return Mutation(row, "unsupported_field", f"{base}.correct_choice_ids")
    # infinite_weight: what a JSON literal such as 1e400 parses to.
    position = draw(st.integers(0, len(row["rubric"]) - 1))
    row["rubric"][position]["weight"] = draw(st.sampled_from([float("inf"), float("-inf")]))
    return Mutation(row, "value_out_of_range", f"{base}.rubric[{position}].weight")


def _deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"k": value}
    return value


# (fields to set, value, expected code, error location when it differs from the fields).
_CONTRACT_BREAKS: tuple[tuple[tuple[str, ...], object, str, tuple[str | int, ...] | None], ...] = (
    (("record_id",), "", "value_out_of_range", None),
    (("record_id",), "r" * 129, "string_too_long", None),
    (("input",), "prompt", "invalid_field_type", None),
    (("input",), None, "invalid_field_type", None),
    (("input", "prompt"), "", "value_out_of_range", None),
    (("input", "prompt"), "p" * 200_001, "string_too_long", None),
    (("input", "prompt"), 7, "invalid_field_type", None),
    (("reference",), {"answer": "a" * 200_001}, "string_too_long", ("reference", "answer")),
    (("tags",), [f"t{i}" for i in range(33)], "value_out_of_range", None),
    (("tags",), ["ok", ""], "value_out_of_range", ("tags", 1)),
    (("tags",), ["t" * 65], "string_too_long", ("tags", 0)),
    (("expected",), {"max_latency_ms": 0}, "value_out_of_range", ("expected", "max_latency_ms")),
    (
        ("expected",),
        {"max_latency_ms": 120_001},
        "value_out_of_range",
        ("expected", "max_latency_ms"),
    ),
    (("expected",), {"max_latency_ms": 1.5}, "invalid_field_type", ("expected", "max_latency_ms")),
    (
        ("expected",),
        {"required_criteria": ["accuracy", "speed"]},
        "invalid_enum_value",
        ("expected", "required_criteria", 1),
    ),
    (("metadata",), _deep(6), "value_out_of_range", None),
    (("metadata",), {"blob": "m" * 8_200}, "value_out_of_range", None),
    (("reference",), {"answer": "a" * 150_000, "x": "b" * 150_000}, "record_too_large", ()),
)


@st.composite
def contract_record_mutations(draw: st.DrawFn) -> Mutation:
    """Break one field of a valid contract record; pair it with the error it must give."""
    rec = copy.deepcopy(draw(contract_records()))
    choice = draw(st.integers(0, len(_CONTRACT_BREAKS) + 4))
    if choice >= len(_CONTRACT_BREAKS):
        kinds = ("record_id", "input", "prompt", "null_byte", "not_nfc")
        kind = kinds[choice - len(_CONTRACT_BREAKS)]
        if kind in ("record_id", "input"):
            del rec[kind]
            return Mutation(rec, "missing_required_field", f"records[0].{kind}")
        if kind == "prompt":
            del rec["input"]["prompt"]
            return Mutation(rec, "missing_required_field", "records[0].input.prompt")
        prompt = rec["input"]["prompt"]
        rec["input"]["prompt"] = (prompt + "\x00") if kind == "null_byte" else _nfc_breaker(prompt)
        return Mutation(rec, "invalid_encoding", "records[0].input.prompt")
    fields, value, code, where = _CONTRACT_BREAKS[choice]
    target = rec
    for field in fields[:-1]:
        target = target[field]
    target[fields[-1]] = copy.deepcopy(value)
    return Mutation(rec, code, format_path("records[0]", fields if where is None else where))
