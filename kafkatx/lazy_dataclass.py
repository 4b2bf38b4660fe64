"""``dataclass``: the standard library's dataclasses, for a fraction of their cost at import.

``dataclasses.dataclass`` compiles four to six methods from source text for every class (~0.5 ms a
class under Python 3.11: ~19 ms of a 0.15 s ``kafkatx lso`` on a tiny log dir, for ~45 classes of
which half never get an instance there). A class made here is still a dataclass made by
``dataclasses.dataclass`` (``fields``, ``replace``, ``asdict`` and ``is_dataclass`` work, and its
``__dataclass_params__`` say what it has), but no method is compiled at import: ``__repr__``,
``__eq__``, the ordering methods and ``__hash__`` are compiled from the source ``dataclasses``
writes on their first call; ``__init__`` assigns a class's first instances' fields from a plan
(``_InitPlan``) and compiles dataclasses' source for the ones after (a class made a few times
while a command runs compiles nothing, one made in a loop runs the same code as a standard
dataclass); a frozen class's ``__setattr__``/``__delattr__`` (which only refuse) and a frozen
slotted class's pickling state are shared functions over the class's field names.
tests/test_lazy_dataclass.py holds every kafkatx class to a twin made by ``dataclasses.dataclass``
with the same options: signature, instances (by plan and compiled), wrong calls' errors, repr,
equality, order, hash, frozen errors, pickles.
Supported: the options kafkatx uses (``frozen``, ``slots``, ``kw_only``, ``eq``, ``order``) and
``field(default=, default_factory=, init=, repr=, compare=, hash=, kw_only=)``; no ``InitVar``.
"""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Callable
from dataclasses import MISSING, FrozenInstanceError
from typing import Any, TypeVar, dataclass_transform

T = TypeVar("T", bound=type)


class _FactoryMarker:
    """The default of a parameter whose field has a ``default_factory`` (dataclasses' marker)."""

    def __repr__(self) -> str:
        return "<factory>"


HAS_DEFAULT_FACTORY = _FactoryMarker()


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def dataclass(cls: T | None = None, /, *, frozen: bool = False, slots: bool = False,
              kw_only: bool = False, eq: bool = True, order: bool = False) -> Any:
    """``dataclasses.dataclass(cls, frozen=, slots=, kw_only=, eq=, order=)``, its methods made
    as the module docstring says."""

    def wrap(cls: T) -> T:
        return _make(cls, frozen=frozen, slots=slots, kw_only=kw_only, eq=eq, order=order)

    return wrap if cls is None else wrap(cls)


def _make(cls: T, *, frozen: bool, slots: bool, kw_only: bool, eq: bool, order: bool) -> T:
    if order and not eq:
        raise ValueError("eq must be true if order is true")
    bases = [b for b in cls.__mro__[1:] if hasattr(b, "__dataclass_fields__")]
    frozen_base = any(b.__dataclass_params__.frozen for b in bases)
    if frozen and bases and not frozen_base:
        raise TypeError("cannot inherit frozen dataclass from a non-frozen one")
    if frozen_base and not frozen:
        raise TypeError("cannot inherit non-frozen dataclass from a frozen one")
    own = dict(cls.__dict__)
    if any("InitVar" in str(t) for t in own.get("__annotations__", {}).values()):
        raise TypeError(f"{cls.__name__}: InitVar is not supported here")
    explicit_hash = not ("__hash__" not in own or (own["__hash__"] is None and "__eq__" in own))
    documented = bool(cls.__doc__)
    if not documented:
        cls.__doc__ = "-"  # set below as dataclasses would, without its signature of no __init__
    # No method compiled: with a frozen base, dataclasses' own inheritance check needs frozen
    # (it then compiles __setattr__/__delattr__ for this class, as it would have).
    made = dataclasses.dataclass(cls, init=False, repr=False, eq=False, frozen=frozen_base,
                                 kw_only=kw_only, slots=slots)
    fields = dataclasses.fields(made)
    params = made.__dataclass_params__
    params.init, params.repr, params.eq, params.order, params.frozen = True, True, eq, order, frozen
    compared = [f.name for f in fields if f.compare]

    def put(name: str, method: Callable[..., Any]) -> None:
        if name not in own:
            setattr(made, name, method)

    _check_defaults(fields)
    put("__init__", _tiered_init(made, slots=slots))
    shown = [f.name for f in fields if f.repr]
    put("__repr__", _on_first_call(made, "__repr__", lambda: _repr(made, shown)))
    if eq:
        put("__eq__", _on_first_call(made, "__eq__", lambda: _compare(made, "__eq__", "==",
                                                                       compared)))
    if order:
        for name, op in (("__lt__", "<"), ("__le__", "<="), ("__gt__", ">"), ("__ge__", ">=")):
            if name in own:
                raise TypeError(f"Cannot overwrite attribute {name} in class {made.__name__}. "
                                "Consider using functools.total_ordering")
            put(name, _on_first_call(made, name, lambda name=name, op=op: _compare(
                made, name, op, compared)))
    if frozen and not frozen_base:
        names = tuple(f.name for f in fields)
        for name in ("__setattr__", "__delattr__"):
            if name in own:
                raise TypeError(f"Cannot overwrite attribute {name} in class {made.__name__}")
        put("__setattr__", _frozen_setattr(made, names))
        put("__delattr__", _frozen_delattr(made, names))
        if slots:
            put("__getstate__", _getstate)
            put("__setstate__", _setstate)
    if eq and not explicit_hash:
        if frozen:
            hashed = _tuple("self", [f.name for f in fields
                                     if (f.compare if f.hash is None else f.hash)])
            made.__hash__ = _on_first_call(  # type: ignore[method-assign]
                made, "__hash__", lambda: _compile(
                    made, "__hash__", f"def __hash__(self):\n return hash({hashed})"))
        else:
            made.__hash__ = None  # type: ignore[assignment]
    if not documented:
        import inspect

        if "__init__" not in own:
            made.__init__ = compile_init(made, slots=slots)  # type: ignore[misc]
        made.__doc__ = made.__name__ + str(inspect.signature(made)).replace(" -> None", "")
    return made


def _on_first_call(cls: type, name: str, make: Callable[[], Callable[..., Any]]
                   ) -> Callable[..., Any]:
    """A stand-in for method ``name`` that, called, puts ``make()``'s method on ``cls`` and runs
    it: the method is compiled once, for classes that use it."""
    def first_call(self: Any, /, *args: Any, **kwargs: Any) -> Any:
        method = make()
        setattr(cls, name, method)
        return method(self, *args, **kwargs)
    first_call.__qualname__ = f"{cls.__qualname__}.{name}"
    return first_call


def _tuple(obj: str, names: list[str]) -> str:
    """``(obj.a,obj.b,)``: the fields' values as dataclasses' methods write them."""
    return f"({''.join(f'{obj}.{name},' for name in names)})"


def _compare(cls: type, name: str, op: str, names: list[str]) -> Callable[[Any, Any], Any]:
    return _compile(cls, name, f"def {name}(self,other):\n"
                               " if other.__class__ is self.__class__:\n"
                               f"  return {_tuple('self', names)}{op}{_tuple('other', names)}\n"
                               " return NotImplemented")


def _compile(cls: type, name: str, source: str,
             names: dict[str, Any] | None = None) -> Callable[..., Any]:
    """Method ``name`` of ``cls`` from ``source``, its globals ``names``."""
    namespace: dict[str, Any] = {}
    # dont_inherit: not this module's ``from __future__ import annotations`` (string annotations)
    exec(compile(source, f"<{cls.__qualname__}.{name}>", "exec", dont_inherit=True),
         {} if names is None else names, namespace)
    method = namespace[name]
    method.__qualname__ = f"{cls.__qualname__}.{name}"
    method.__module__ = cls.__module__
    return method  # type: ignore[no-any-return]


def _repr(cls: type, names: list[str]) -> Callable[[Any], str]:
    values = ", ".join(f"{name}={{self.{name}!r}}" for name in names)
    method = _compile(cls, "__repr__", "def __repr__(self):\n"
                                       f' return self.__class__.__qualname__ + f"({values})"')
    return reprlib.recursive_repr()(method)  # type: ignore[no-any-return]


def _frozen_setattr(cls: type, names: tuple[str, ...]) -> Callable[[Any, str, Any], None]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)
    return __setattr__


def _frozen_delattr(cls: type, names: tuple[str, ...]) -> Callable[[Any, str], None]:
    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)
    return __delattr__


def _getstate(self: Any) -> list[Any]:
    return [getattr(self, f.name) for f in dataclasses.fields(self)]


def _setstate(self: Any, state: list[Any]) -> None:
    for field, value in zip(dataclasses.fields(self), state, strict=False):
        object.__setattr__(self, field.name, value)


def _check_defaults(fields: tuple[dataclasses.Field[Any], ...]) -> None:
    """dataclasses' rule for ``__init__``'s positional parameters, at class creation."""
    seen_default = False
    for f in fields:
        if f.init and not f.kw_only:
            if f.default is not MISSING or f.default_factory is not MISSING:
                seen_default = True
            elif seen_default:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")


# A class's first calls of __init__ assign its fields from a plan (a few µs each); the one after
# them compiles its own __init__ (~0.15 ms, then ~0.5 µs a call): a class made a few times while
# a command runs costs no compile, one made in a loop runs dataclasses' code.
COMPILE_AFTER_CALLS = 16


def _tiered_init(cls: type, *, slots: bool) -> Callable[..., None]:
    plan: _InitPlan | None = None
    calls = 0

    def __init__(self: Any, /, *args: Any, **kwargs: Any) -> None:  # a field may be "self"
        nonlocal plan, calls
        calls += 1
        if calls <= COMPILE_AFTER_CALLS:
            if plan is None:
                plan = _InitPlan(cls, slots=slots)
            if plan.assign(self, args, kwargs):
                return
        # also where the arguments are wrong: its error
        init = compile_init(cls, slots=slots, plan=plan)
        cls.__init__ = init  # type: ignore[misc]
        init(self, *args, **kwargs)

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


_ARGUMENT, _FACTORY, _DEFAULT = range(3)


class _InitPlan:
    """What ``cls``'s ``__init__`` does (dataclasses' ``_init_fn``), as data: its parameters,
    then each field's value in field order (an argument or its default, a factory's product, a
    slot's default). :meth:`assign` carries it out; :func:`compile_init` writes it as source."""

    def __init__(self, cls: type, *, slots: bool) -> None:
        self.fields = dataclasses.fields(cls)
        self.frozen = cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
        self.post_init = hasattr(cls, "__post_init__")
        self.positional = [f for f in self.fields if f.init and not f.kw_only]
        self.keyword = [f for f in self.fields if f.init and f.kw_only]
        self.parameters = {f.name for f in self.fields if f.init}
        self.required = [f.name for f in self.fields if f.init and f.default is MISSING
                         and f.default_factory is MISSING]
        self.steps: list[tuple[str, int, Any]] = []
        for f in self.fields:
            if f.default_factory is not MISSING:
                self.steps.append((f.name, _FACTORY, (f.default_factory, f.init)))
            elif f.init:
                self.steps.append((f.name, _ARGUMENT, f.default))
            elif slots and f.default is not MISSING:
                self.steps.append((f.name, _DEFAULT, f.default))
            # else: the class attribute holds the default

    def assign(self, obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Set ``obj``'s fields from the call's arguments; False (nothing done) where they do
        not bind (the compiled ``__init__`` then says why)."""
        if len(args) > len(self.positional):
            return False
        values = {f.name: value for f, value in zip(self.positional, args, strict=False)}
        for name, value in kwargs.items():
            if name in values or name not in self.parameters:
                return False
            values[name] = value
        if any(name not in values for name in self.required):
            return False
        put = object.__setattr__ if self.frozen else setattr
        for name, kind, extra in self.steps:
            if kind == _ARGUMENT:
                put(obj, name, values.get(name, extra))
            elif kind == _FACTORY:
                factory, init = extra
                value = values.get(name, HAS_DEFAULT_FACTORY) if init else HAS_DEFAULT_FACTORY
                put(obj, name, factory() if value is HAS_DEFAULT_FACTORY else value)
            else:
                put(obj, name, extra)
        if self.post_init:
            obj.__post_init__()
        return True


def compile_init(cls: type, *, slots: bool, plan: _InitPlan | None = None
                 ) -> Callable[..., None]:
    """``cls.__init__`` from the source ``dataclasses`` writes for it (``_init_fn``): its
    :class:`_InitPlan` (``plan``, made here when None) as source."""
    plan = _InitPlan(cls, slots=slots) if plan is None else plan
    self_name = "__dataclass_self__" if any(f.name == "self" for f in plan.fields) else "self"
    names: dict[str, Any] = {"_HAS_DEFAULT_FACTORY": HAS_DEFAULT_FACTORY,
                             "_object_setattr": object.__setattr__}
    names.update((f"_type_{f.name}", f.type) for f in plan.fields)

    def parameter(f: dataclasses.Field[Any]) -> str:
        if f.default is not MISSING:
            return f"{f.name}:_type_{f.name}=_dflt_{f.name}"
        if f.default_factory is not MISSING:
            return f"{f.name}:_type_{f.name}=_HAS_DEFAULT_FACTORY"
        return f"{f.name}:_type_{f.name}"

    params = [self_name, *map(parameter, plan.positional)]
    if plan.keyword:
        params += ["*", *map(parameter, plan.keyword)]
    body = []
    for name, kind, extra in plan.steps:
        default = f"_dflt_{name}"
        if kind == _ARGUMENT:
            if extra is not MISSING:
                names[default] = extra
            value = name
        elif kind == _FACTORY:
            names[default], init = extra
            value = f"{default}() if {name} is _HAS_DEFAULT_FACTORY else {name}" if init \
                else f"{default}()"
        else:
            names[default] = extra
            value = default
        body.append(f"_object_setattr({self_name},{name!r},{value})" if plan.frozen
                    else f"{self_name}.{name}={value}")
    if plan.post_init:
        body.append(f"{self_name}.__post_init__()")
    source = f"def __init__({','.join(params)})->None:\n " + "\n ".join(body or ["pass"])
    return _compile(cls, "__init__", source, names)
