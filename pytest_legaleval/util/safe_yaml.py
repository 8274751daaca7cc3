"""One YAML loader for every YAML file the tool reads: safe, fast, and bounded.

PyYAML's safe loader refuses Python tags but not alias bombs: ``a: &a [x, x, x]``,
``b: &b [*a, *a, *a]`` … is a few hundred bytes that stand for billions of nodes. Loading
shares them, but whatever walks the result afterwards (a ``str()``, a JSON dump for a
manifest, a deep copy) expands them: 8 levels of a config read automatically
(``legaleval.yaml``) cost 430 MB and 7 s. So a document that uses aliases is measured
*before* it is built: the node graph the parser produces shares aliased nodes, and its
expanded size (nodes plus scalar characters, every alias counted in full) is added up
without expanding anything. A document whose aliases make it more than
:data:`ALIAS_EXPANSION_FACTOR` times its written size, and more than
:data:`ALIAS_EXPANSION_LIMIT`, is refused, and so is an alias that contains itself. A
document without ``*`` has no alias and is not measured.

libyaml's parser is used when PyYAML was built with it (the built-in policies and prices
are read by every process at start-up).
"""

from __future__ import annotations

from typing import Any

import yaml

from pytest_legaleval.errors import ConfigError, LegalEvalError
from pytest_legaleval.util.strict_json import non_finite_paths

__all__ = ["ALIAS_EXPANSION_FACTOR", "ALIAS_EXPANSION_LIMIT", "load_yaml"]

_SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

ALIAS_EXPANSION_LIMIT = 1_000_000
"""Expanded size (nodes plus scalar characters) any document may reach through aliases."""
ALIAS_EXPANSION_FACTOR = 10
"""A larger document may grow to this many times its own (unexpanded) size."""

_STARTED = -1


class _TooLarge(LegalEvalError):
    def __init__(self, reason: str, node: yaml.Node) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = node.start_mark.line + 1


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _own_size(node: yaml.Node) -> int:
    return 1 + len(node.value) if isinstance(node, yaml.ScalarNode) else 1


def _measure(root: yaml.Node) -> None:
    """Refuse a node graph whose aliases expand it too far, or that contains itself.

    Each distinct node is visited once (an alias is the same node object again), so the
    walk is linear in the written document however far it would expand.
    """
    sizes: dict[int, int] = {}  # id(node) -> expanded size, or _STARTED while inside it
    written = 0
    finished: list[yaml.Node] = []  # post-order: every node after the nodes inside it
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            sizes[id(node)] = _own_size(node) + sum(sizes[id(c)] for c in _children(node))
            finished.append(node)
            continue
        if id(node) in sizes:
            continue
        sizes[id(node)] = _STARTED
        written += _own_size(node)
        stack.append((node, True))
        for child in _children(node):
            state = sizes.get(id(child))
            if state == _STARTED:
                raise _TooLarge("an alias refers to a node that contains it", child)
            if state is None:
                stack.append((child, False))
    limit = max(ALIAS_EXPANSION_LIMIT, ALIAS_EXPANSION_FACTOR * written)
    if sizes[id(root)] > limit:
        # Name the innermost node that is already too large: where the bomb is.
        culprit = next(node for node in finished if sizes[id(node)] > limit)
        raise _TooLarge(
            f"its aliases expand it to more than {limit:,} nodes and characters "
            f"(as written it has {written:,})",
            culprit,
        )


def load_yaml(text: str, *, source: str) -> Any:
    """Parse one YAML document safely (PyYAML's safe schema), refusing alias bombs.

    Args:
        text: the document.
        source: what messages call it (the file, or ``--price-table x.yaml``).

    Returns:
        The document's value (``None`` for an empty document).

    Raises:
        ConfigError: not valid YAML, a Python (or other unsafe) tag, more than one
            document, nested deeper than the parser allows, aliases that expand too far,
            or a non-finite number (``.nan``, ``.inf``); the message names ``source``.

    """
    loader = _SAFE_LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if "*" in text:
            _measure(node)
        value = loader.construct_document(node)
    except _TooLarge as exc:
        raise ConfigError(
            f"{source}: refused at line {exc.line}: {exc.reason}; write the values out "
            "instead of repeating aliases"
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{source}: not valid YAML: nested too deeply") from None
    finally:
        loader.dispose()
    bad = non_finite_paths(value, limit=1)
    if bad:
        # YAML's .nan and .inf (and 1e999) are floats no JSON artifact can hold, and NaN
        # slips through every range check (each comparison with it is false).
        where = bad[0].removeprefix("$.").removeprefix("$") or "the document"
        raise ConfigError(
            f"{source}: {where} is not a finite number (.nan, .inf and numbers beyond a "
            "double are refused); write a number"
        )
    return value
