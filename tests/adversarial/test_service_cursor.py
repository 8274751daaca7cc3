"""A hostile ``cursor`` (or ``limit``) for ``GET /v1/runs``: a 400 envelope, never a 500.

Issue 31 (LOW): ``cursor=²`` was a 500 — ``"²".isdigit()`` is true, ``int("²")`` is not.
"""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

pytest.importorskip("fastapi", reason="legaleval serve needs the [serve] extra")

from ..service_harness import call, document, record, service_app

HOSTILE_CURSORS = [
    "²", "٣", "１", "-1", "+1", "1.5", "1e3", "0x10", " 1", "1 ", "", "abc", "MTIz", "MTIz==",
    "=", "%", "\x00", "\n", "9" * 19, "9" * 4000, "1;DROP TABLE runs", "null", "[]", "\ud800",
]  # fmt: skip


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> object:
    app, _ = service_app(tmp_path_factory.mktemp("cursor"))
    body = json.dumps(document("cursor", [record("a", "Q?")])).encode()
    for _ in range(3):
        status, _, _ = call(
            app, "POST", "/v1/runs", body=body, headers={"Content-Type": "application/json"}
        )
        assert status == 202
    return app


@pytest.mark.parametrize("cursor", HOSTILE_CURSORS)
def test_a_cursor_the_service_did_not_give_out_is_a_400(app: object, cursor: str) -> None:
    encoded = quote(cursor.encode("utf-8", "surrogatepass"), safe="")
    status, headers, body = call(app, "GET", f"/v1/runs?cursor={encoded}")
    assert status == 400, body
    assert body["error"]["code"] == "invalid_request"
    assert body["request_id"] == headers["x-request-id"]


@pytest.mark.parametrize("raw", ["%FF", "%C2", "%ED%A0%80", "%00", "%%", "a=b&cursor"])
def test_undecodable_query_bytes_are_a_400_or_ignored_never_a_500(app: object, raw: str) -> None:
    status, _, body = call(app, "GET", f"/v1/runs?cursor={raw}")
    assert status == 400, body
    for limit in (raw, "nan", "inf", "-1", "1e2", "99999999999999999999"):
        status, _, body = call(app, "GET", f"/v1/runs?limit={limit}")
        assert status == 400, (limit, body)


def test_the_cursors_the_service_gives_out_still_page(app: object) -> None:
    status, _, first = call(app, "GET", "/v1/runs?limit=2")
    assert status == 200 and first["next_cursor"] is not None
    status, _, second = call(app, "GET", f"/v1/runs?limit=2&cursor={first['next_cursor']}")
    assert status == 200 and len(second["runs"]) == 1 and second["next_cursor"] is None
    status, _, none_left = call(app, "GET", "/v1/runs?cursor=0")
    assert status == 200 and none_left["runs"] == []
