"""Every class made by ``kafkatx.lazy_dataclass.dataclass`` against its twin made by
``dataclasses.dataclass``: the module's source run again with the standard decorator in its place,
then each class and its twin compared (signature, doc, params, instances, repr, equality, order,
hash, frozen errors, replace, pickles)."""

from __future__ import annotations

import copy
import dataclasses
import importlib.util
import inspect
import pickle
import pkgutil
import re
import sys
from pathlib import Path
from typing import Any

import pytest

import kafkatx
import kafkatx.lazy_dataclass as lazy

DECORATOR_LINE = "from kafkatx.lazy_dataclass import dataclass"


def module_sources() -> dict[str, str]:
    """kafkatx's Python modules (not ``__main__``, which runs the CLI) and their source."""
    sources = {}
    for info in pkgutil.walk_packages(kafkatx.__path__, "kafkatx."):
        spec = importlib.util.find_spec(info.name)
        if spec and spec.origin and spec.origin.endswith(".py") and info.name != "kafkatx.__main__":
            sources[info.name] = Path(spec.origin).read_text()
    return sources


SOURCES = module_sources()
MODULES = [name for name, text in SOURCES.items() if DECORATOR_LINE in text]




def twin_module(name: str) -> Any:
    """``name``'s source run as a new module whose ``dataclass`` is the standard library's."""
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin is not None
    twin_spec = importlib.util.spec_from_file_location(f"twin_{name}", spec.origin)
    module = importlib.util.module_from_spec(twin_spec)  # type: ignore[arg-type]
    sys.modules[module.__name__] = module  # dataclasses resolves string annotations there

    def standard(cls: Any = None, /, **options: Any) -> Any:
        return dataclasses.dataclass(cls, **options) if cls is not None else (
            lambda c: dataclasses.dataclass(c, **options))

    original = lazy.dataclass
    lazy.dataclass = standard  # type: ignore[assignment]
    try:
        twin_spec.loader.exec_module(module)  # type: ignore[union-attr]
    finally:
        lazy.dataclass = original
        del sys.modules[module.__name__]
    return module


def class_pairs(name: str) -> list[tuple[type, type]]:
    module = importlib.import_module(name)
    twin = twin_module(name)
    pairs = []
    for attr, value in vars(module).items():
        if (isinstance(value, type) and value.__module__ == name
                and "__dataclass_fields__" in value.__dict__):
            pairs.append((value, getattr(twin, attr)))
    return pairs


def arguments(cls: type, seed: int) -> tuple[list[Any], dict[str, Any]]:
    """Distinct values for each parameter ``__init__`` has no default for."""
    args, kwargs = [], {}
    init = lazy.compile_init(cls, slots="__slots__" in cls.__dict__)
    for i, p in enumerate(list(inspect.signature(init).parameters.values())[1:]):
        if p.default is not inspect.Parameter.empty:
            continue
        value = seed * 1000 + i
        if p.kind is inspect.Parameter.KEYWORD_ONLY:
            kwargs[p.name] = value
        else:
            args.append(value)
    return args, kwargs


def outcome(call: Any) -> tuple[str, Any]:
    try:
        return "value", call()
    except Exception as e:  # the two classes must fail alike
        return type(e).__name__, str(e)


def plain(value: Any) -> Any:
    """``value``, or its type where it compares by identity (the twin module made its own)."""
    return type(value).__name__ if type(value).__eq__ is object.__eq__ else value


def state(obj: Any) -> dict[str, Any]:
    """Each field's value; a default factory's product by its type (a clock's differs)."""
    return {f.name: (type(value).__name__ if f.default_factory is not dataclasses.MISSING
                     else plain(value))
            for f in dataclasses.fields(obj)
            for value in (getattr(obj, f.name, "<unset>"),)}


def shown(text: str) -> str:
    """``text`` without the module prefix of the twin's classes and objects' addresses."""
    return re.sub(r" at 0x[0-9a-f]+", "", text.replace("twin_", ""))


@pytest.mark.parametrize("module_name", MODULES)
def test_classes_behave_as_dataclasses_makes_them(module_name: str) -> None:
    pairs = class_pairs(module_name)
    assert pairs, f"{module_name} imports the decorator but no class was found"
    for ours, theirs in pairs:
        where = f"{ours.__qualname__} ({module_name})"
        init = lazy.compile_init(ours, slots="__slots__" in ours.__dict__)
        assert shown(str(inspect.signature(init))) == shown(
            str(inspect.signature(theirs.__init__))), where
        assert ours.__doc__ == theirs.__doc__, where
        for param in ("init", "repr", "eq", "order", "unsafe_hash", "frozen"):
            assert (getattr(ours.__dataclass_params__, param)
                    == getattr(theirs.__dataclass_params__, param)), (where, param)
        assert [(f.name, f.type, f.kw_only, f.compare) for f in dataclasses.fields(ours)] == \
            [(f.name, f.type, f.kw_only, f.compare) for f in dataclasses.fields(theirs)], where
        assert ours.__dict__.get("__slots__") == theirs.__dict__.get("__slots__"), where
        assert ours.__match_args__ == theirs.__match_args__, where
        assert (ours.__hash__ is None) == (theirs.__hash__ is None), where
        compare_instances(ours, theirs, where)


def compare_instances(ours: type, theirs: type, where: str) -> None:
    made = []
    for seed in (1, 2, 1):
        args, kwargs = arguments(ours, seed)
        a = outcome(lambda: ours(*args, **kwargs))  # noqa: B023 - called at once
        b = outcome(lambda: theirs(*args, **kwargs))  # noqa: B023
        assert a[0] == b[0], (where, a, b)
        if a[0] != "value":
            assert a[1] == b[1], where
            return
        x, y = a[1], b[1]
        assert state(x) == state(y), where
        # the same through the compiled __init__ (a class's calls after its first ones)
        compiled = ours.__new__(ours)
        c = outcome(lambda: lazy.compile_init(
            ours, slots="__slots__" in ours.__dict__)(compiled, *args, **kwargs))  # noqa: B023
        assert c[0] == "value" and state(compiled) == state(y), where
        wrong = {**kwargs, "not_a_field": 1}
        assert outcome(lambda: ours(*args, **wrong)) == outcome(  # noqa: B023
            lambda: theirs(*args, **wrong)), where  # noqa: B023
        assert shown(repr(x)) == shown(repr(y)), where
        made.append((x, y))
    (x1, y1), (x2, y2), (x3, y3) = made
    for op in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
        for (p, q), (r, s) in (((x1, y1), (x2, y2)), ((x1, y1), (x3, y3))):
            assert outcome(lambda: getattr(p, op)(r)) == outcome(  # noqa: B023
                lambda: getattr(q, op)(s)), (where, op)  # noqa: B023
    if ours.__dataclass_params__.eq:
        assert outcome(lambda: hash(x1)) == outcome(lambda: hash(y1)), where
    else:
        assert hash(x1) == object.__hash__(x1) and hash(y1) == object.__hash__(y1), where
    # A name that is no field: both refuse it (on a frozen slotted class Python 3.11's
    # dataclasses raise TypeError from its __setattr__'s super() of the class before slots,
    # FrozenInstanceError here as in later Pythons).
    for fail in (lambda obj: setattr(obj, "new_attribute", 1),
                 lambda obj: delattr(obj, "new_attribute")):
        a, b = outcome(lambda: fail(x1)), outcome(lambda: fail(y1))  # noqa: B023
        assert (a[0] == "value") == (b[0] == "value"), (where, a, b)
    for name in (f.name for f in dataclasses.fields(x1)):
        assert outcome(lambda: setattr(x1, name, 1)) == outcome(  # noqa: B023
            lambda: setattr(y1, name, 1)), (where, name)  # noqa: B023
        assert outcome(lambda: delattr(x1, name)) == outcome(  # noqa: B023
            lambda: delattr(y1, name)), (where, name)  # noqa: B023
    fresh = outcome(lambda: dataclasses.replace(x2))
    assert fresh[0] == outcome(lambda: dataclasses.replace(y2))[0], where
    if fresh[0] == "value":
        assert state(fresh[1]) == state(x2), where
    copied = outcome(lambda: copy.copy(x2))
    assert copied[0] == outcome(lambda: copy.copy(y2))[0], where
    if copied[0] == "value":
        assert state(copied[1]) == state(x2), where
    pickled = outcome(lambda: pickle.loads(pickle.dumps(x2)))
    if pickled[0] == "value":  # classes defined in a function do not pickle by name
        assert type(pickled[1]) is ours and state(pickled[1]) == state(x2), where


def test_every_module_with_dataclasses_uses_the_lazy_one() -> None:
    """The standard decorator compiles each class's methods at import (what this module
    avoids); kafkatx's own classes all go through one."""
    standard = [name for name, text in SOURCES.items()
                if "@dataclasses.dataclass" in text
                or re.search(r"^from dataclasses import .*\bdataclass\b", text, re.M)]
    assert standard == []
    assert len(MODULES) > 50


def test_unsupported_and_wrong_uses_fail_at_once() -> None:
    with pytest.raises(ValueError, match="eq must be true"):
        @lazy.dataclass(order=True, eq=False)
        class Ordered:
            a: int

    @lazy.dataclass
    class Base:
        a: int

    with pytest.raises(TypeError, match="frozen dataclass from a non-frozen"):
        @lazy.dataclass(frozen=True)
        class FrozenChild(Base):
            b: int

    @lazy.dataclass(frozen=True, slots=True)
    class FrozenBase:
        a: int

    with pytest.raises(TypeError, match="non-frozen dataclass from a frozen"):
        @lazy.dataclass
        class ThawedChild(FrozenBase):
            b: int

    @lazy.dataclass(frozen=True, slots=True, kw_only=True)
    class Child(FrozenBase):
        b: list[int] = dataclasses.field(default_factory=list)

    child = Child(1, b=[2])
    assert child == Child(1, b=[2]) and child != Child(1) and Child(1).b == []
    assert Child(1).b is not Child(1).b
    with pytest.raises(dataclasses.FrozenInstanceError):
        child.a = 3  # type: ignore[misc]


def test_methods_are_compiled_once_on_first_call() -> None:
    @lazy.dataclass(frozen=True, slots=True, order=True)
    class Point:
        """A point."""

        x: int
        y: int = 0

    names = ("__repr__", "__eq__", "__lt__", "__hash__")
    stubs = {name: Point.__dict__[name] for name in names}
    p = Point(1)
    assert (repr(p).endswith(".Point(x=1, y=0)"), p == Point(1, 0), p < Point(2), hash(p)) == (
        True, True, True, hash((1, 0)))
    compiled = {name: Point.__dict__[name] for name in names}
    assert all(compiled[name] is not stubs[name] for name in names)
    assert (repr(Point(3)).endswith(".Point(x=3, y=0)"), p == Point(2), p < Point(0),
            hash(Point(3))) == (True, False, False, hash((3, 0)))
    assert {name: Point.__dict__[name] for name in names} == compiled


def test_init_assigns_from_a_plan_then_compiles() -> None:
    @lazy.dataclass(slots=True, kw_only=True)
    class Row:
        """A row."""

        key: str
        values: list[int] = dataclasses.field(default_factory=list)
        seen: int = 0

    first = Row.__init__
    made = [Row(key=str(i)) for i in range(lazy.COMPILE_AFTER_CALLS)]
    assert Row.__init__ is first  # assigned from the plan: nothing compiled yet
    assert [r.key for r in made] == [str(i) for i in range(lazy.COMPILE_AFTER_CALLS)]
    assert all(r.values == [] and r.seen == 0 for r in made)
    assert len({id(r.values) for r in made}) == len(made)  # a new list each
    last = Row(key="x", seen=2)
    assert Row.__init__ is not first and Row.__init__.__qualname__.endswith("Row.__init__")
    assert (last.key, last.values, last.seen) == ("x", [], 2)
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'key'"):
        Row()


def test_a_field_named_self_and_an_own_init() -> None:
    @lazy.dataclass(kw_only=True)
    class Odd:
        self: int
        other: int = 0

    theirs = dataclasses.dataclass(kw_only=True)(
        type("Odd", (), {"__annotations__": {"self": "int", "other": "int"}, "other": 0}))
    assert (Odd(self=1).self, Odd.__doc__) == (1, theirs.__doc__)

    def own_init(self: Any, text: str) -> None:
        self.a = len(text)

    made = {}
    for name, decorator in (("ours", lazy.dataclass), ("theirs", dataclasses.dataclass)):
        made[name] = decorator(type("Own", (), {"__annotations__": {"a": "int"},
                                                "__init__": own_init}))
    assert made["ours"]("abc").a == 3
    assert made["ours"].__doc__ == made["theirs"].__doc__
