"""The recorder's state is set only through its own methods (issue 42, "types to the end").

``RunRecorder`` is the only writer of a run directory; what it knows (its directory, states,
terminal status, the ``--batch`` counters, the figures) changes only through its methods.
Two checks keep it so: an AST scan of the package finds no assignment to, deletion of or
in-place change of an attribute of a recorder (``recorder.x = ...``, ``x.recorder.y += ...``,
``recorder.x[k] = ...``, ``recorder.x.append(...)``, ``setattr(recorder, ...)``) outside its
own module, and the recorder's public state is made of read-only properties.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pytest_legaleval.run.recorder import RunRecorder

PACKAGE = Path(__file__).parents[2] / "pytest_legaleval"
OWN = PACKAGE / "run" / "recorder.py"
_MUTATORS = frozenset(
    {"append", "extend", "insert", "update", "add", "clear", "pop", "popitem", "remove",
     "discard", "setdefault", "sort", "reverse", "__setitem__", "__delitem__"}
)  # fmt: skip


def _names_a_recorder(node: ast.expr) -> bool:
    """``recorder``, ``self.recorder``, ``state._recorder`` … (a recorder or its plugin)."""
    if isinstance(node, ast.Name):
        return "recorder" in node.id.lower()
    if isinstance(node, ast.Attribute):
        return "recorder" in node.attr.lower()
    return False


def _owner(target: ast.expr) -> ast.expr | None:
    """The object whose attribute ``target`` changes (``a.b[k]`` → ``a``), if any."""
    while isinstance(target, ast.Subscript):
        target = target.value
    return target.value if isinstance(target, ast.Attribute) else None


def recorder_writes(source: str) -> list[int]:
    """Line numbers in ``source`` that change a recorder's attributes from outside."""
    found: list[int] = []
    for node in ast.walk(ast.parse(source)):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = [t for tgt in node.targets for t in _unpacked(tgt)]
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and node.args:
                if _names_a_recorder(node.args[0]):
                    found.append(node.lineno)
            elif isinstance(func, ast.Attribute) and func.attr in _MUTATORS:
                owner = _owner(func.value)
                if owner is not None and _names_a_recorder(owner):
                    found.append(node.lineno)
        for target in targets:
            owner = _owner(target)
            if owner is not None and _names_a_recorder(owner):
                found.append(node.lineno)
    return sorted(found)


def _unpacked(target: ast.expr) -> list[ast.expr]:
    if isinstance(target, ast.Tuple | ast.List):
        return [t for element in target.elts for t in _unpacked(element)]
    return [target]


def test_the_scan_finds_every_way_of_changing_a_recorder_from_outside() -> None:
    source = "\n".join(
        [
            "recorder.batches = {}",  # 1
            "self.recorder.status += 'x'",  # 2
            "plugin.recorder.final[0] = {}",  # 3
            "state.recorder.transitions.append({})",  # 4
            "setattr(session.recorder, 'run_error', 'x')",  # 5
            "a, recorder.directory = 1, 2",  # 6
            "del recorder._figures",  # 7
            "recorder.pending[nodeid] = found",  # 8
            "recorder.note_batches({})",  # a method: fine
            "self.recorder = RunRecorder()",  # the owner keeps a reference: fine
            "batches = recorder.batches",  # a read: fine
        ]
    )
    assert recorder_writes(source) == [1, 2, 3, 4, 5, 6, 7, 8]


def test_no_module_changes_a_recorders_attributes_from_outside() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != OWN
        for line in recorder_writes(path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], "route these through a RunRecorder/RecorderPlugin method"


def test_the_recorders_public_state_is_read_only() -> None:
    tree = ast.parse(OWN.read_text(encoding="utf-8"))
    (cls,) = (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "RunRecorder")
    assigned = {
        t.attr
        for node in ast.walk(cls)
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign)
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
    }
    assert assigned and all(name.startswith("_") for name in assigned), sorted(assigned)
    public = {n: v for n, v in vars(RunRecorder).items() if isinstance(v, property)}
    for name in ("directory", "status", "run_error", "final", "batches", "transitions"):
        assert public[name].fset is None, name
    # A property without a setter refuses assignment at run time as well.
    with pytest.raises(AttributeError):
        setattr(object.__new__(RunRecorder), "status", "passed")  # noqa: B010


def test_the_recorder_plugin_changes_only_its_private_state_after_init() -> None:
    source = (PACKAGE / "pytest" / "recorder_plugin.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    (cls,) = (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "RecorderPlugin")
    public_writes = [
        f"{method.name}: self.{target.attr}"
        for method in cls.body
        if isinstance(method, ast.FunctionDef) and method.name != "__init__"
        for node in ast.walk(method)
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
        and not target.attr.startswith("_")
    ]
    assert public_writes == []
    from pytest_legaleval.pytest.recorder_plugin import RecorderPlugin

    for name in ("invalid", "other_failures", "directory", "run_error", "status"):
        prop = vars(RecorderPlugin)[name]
        assert isinstance(prop, property) and prop.fset is None, name
