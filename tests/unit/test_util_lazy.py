"""The faces' lazy names: one ``__getattr__``/``__dir__`` shared by every face."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_legaleval.errors import LegalEvalError
from pytest_legaleval.util.lazy import face_dir, lazy_getattr

TABLE = {"dumps": "json", "json": "json"}


def test_a_name_loads_from_its_module_and_is_kept_when_asked() -> None:
    namespace: dict[str, Any] = {"__all__": ["dumps", "json"]}
    get = lazy_getattr("face", TABLE, namespace, modules=frozenset({"json"}))
    assert get("dumps") is json.dumps
    assert get("json") is json  # a module the face exports as itself
    assert namespace["dumps"] is json.dumps and namespace["json"] is json
    assert face_dir(namespace)() == ["__all__", "dumps", "json"]


def test_without_a_namespace_nothing_is_kept() -> None:
    get = lazy_getattr("face", TABLE)
    assert get("dumps") is json.dumps
    assert face_dir({"__all__": ["dumps"]})() == ["__all__", "dumps"]


def test_an_unknown_name_is_our_error_and_an_attribute_error() -> None:
    get = lazy_getattr("pkg.face", TABLE)
    with pytest.raises(AttributeError, match=r"module 'pkg\.face' has no attribute 'loads'") as e:
        get("loads")
    assert isinstance(e.value, LegalEvalError)
