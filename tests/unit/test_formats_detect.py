from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.formats import detect_format, load_dataset

DATA = Path(__file__).parent.parent / "data"
ROW = (DATA / "real" / "lexam_sample.jsonl").read_bytes().splitlines(keepends=True)[0]
CONTRACT = DATA / "contract" / "qa_eval_set.json"


def test_jsonl_content_in_a_txt_file_is_legal_eval(tmp_path: Path) -> None:
    path = tmp_path / "rows.txt"
    path.write_bytes(ROW)
    assert detect_format(path) == "legal_eval_v1"
    assert len(load_dataset([path]).records) == 1


def test_pretty_printed_contract_document(tmp_path: Path) -> None:
    assert detect_format(CONTRACT) == "contract_v1"
    path = tmp_path / "upload.data"
    shutil.copy(CONTRACT, path)
    assert detect_format(path) == "contract_v1"


def test_one_line_contract_document_in_a_jsonl_file(tmp_path: Path) -> None:
    path = tmp_path / "doc.jsonl"
    path.write_text(json.dumps(json.loads(CONTRACT.read_text())))
    assert detect_format(path) == "contract_v1"


def test_legal_eval_row_in_a_json_file(tmp_path: Path) -> None:
    path = tmp_path / "rows.json"
    path.write_bytes(ROW)
    assert detect_format(path) == "legal_eval_v1"


def test_row_without_schema_version_is_recognized_by_its_keys() -> None:
    head = b'{"id": "x", "task_type": "mcq", "prompt": "p"}\n'
    assert detect_format(Path("data.bin"), head) == "legal_eval_v1"


def test_bom_and_leading_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "rows.txt"
    path.write_bytes(b"\xef\xbb\xbf\r\n\n  " + ROW)
    assert detect_format(path) == "legal_eval_v1"


def test_first_row_longer_than_the_head() -> None:
    head = b'{"schema_version": "legal_eval_v1", "prompt": "' + b"x" * 70_000
    assert detect_format(Path("big.txt"), head[:65_536]) == "legal_eval_v1"


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("empty.jsonl", b"", "legal_eval_v1"),  # then rejected on load: no rows
        ("empty.json", b"  \n", "contract_v1"),
        ("corrupt.jsonl", b'{"id": "\xff\xfe", broken\n', "legal_eval_v1"),
        ("garbage.json", b"{{{", "contract_v1"),
    ],
)
def test_suffix_decides_only_when_content_says_nothing(
    tmp_path: Path, name: str, content: bytes, expected: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    assert detect_format(path) == expected


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("other.jsonl", b'{"record_id": "q1", "response": "B"}\n'),  # a responses file
        ("list.json", b'[{"question": "q"}]'),
        ("empty.txt", b""),
        ("notes.txt", b"hello"),
        ("garbage.jsonl", b"\xff\xfe not json\n"),
        ("both.jsonl", b'{"schema_version": "legal_eval_v1", "records": []}\n'),
    ],
)
def test_undecidable_content_names_the_option(tmp_path: Path, name: str, content: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ConfigError, match="--dataset-format"):
        detect_format(path)
    with pytest.raises(ConfigError, match=name):
        load_dataset([path])
