"""A face whose names load on first use: its ``__getattr__`` and ``__dir__``.

The ``engine``, ``metrics``, ``service`` and ``testing`` faces import their heavy names only
when a caller first asks for one (PEP 562), so importing a face stays cheap and loads no more
than it must. The package face keeps its own two functions: importing it loads only the
values and the errors.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

from pytest_legaleval.errors import UnknownAttribute

__all__ = ["face_dir", "lazy_getattr"]


def lazy_getattr(
    face: str,
    table: Mapping[str, str],
    namespace: MutableMapping[str, Any] | None = None,
    *,
    modules: frozenset[str] = frozenset(),
) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``face``: each name of ``table`` from its module.

    Args:
        face: the face's ``__name__``, named in the error for a name it does not have.
        table: each lazy name and the module (dotted, absolute) that defines it.
        namespace: the face's ``globals()``, where a loaded name is kept; ``None`` loads it
            from the module in ``sys.modules`` at every access (pytester's in-process runs
            drop and re-import submodules, so a kept name could be a stale one).
        modules: names that are modules themselves (the face exports the module).

    Raises:
        UnknownAttribute: (from the returned function) a name the face does not have.

    """

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise UnknownAttribute(f"module {face!r} has no attribute {name!r}")
        loaded = importlib.import_module(module)
        value = loaded if name in modules else getattr(loaded, name)
        if namespace is not None:
            namespace[name] = value
        return value

    return __getattr__


def face_dir(namespace: Mapping[str, Any]) -> Callable[[], list[str]]:
    """The module ``__dir__`` of a face: what it holds now and every name of its ``__all__``."""

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(namespace.get("__all__", ())))

    return __dir__
