"""The ``regbot.yml`` walker (SPEC §5): YAML in, the settings dataclasses out, every key checked.

``regbot.yml`` is read straight into the dataclasses the stages themselves take (one settings
tree, no converters); each field declares how the file writes it by its annotation and, where
the type is not enough, a marker of ``regbot.settings_fields`` in ``typing.Annotated``. Unknown
keys and wrong values are an ``InputError`` naming the dotted key and its line
(``regbot.yml:12: gate.min_delta: expected a number, found 'abc'``). Values are converted by
``regbot.bot.config_values``. O(keys in the file).

Design (the type-to-reader rules, why ``Annotated`` markers, workloads and presets):
docs/design/config_reader.md
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, dataclass, fields, is_dataclass
from functools import cache
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Literal,
    TypeVar,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
)

from regbot.bot import config_values as values
from regbot.detection.presets import (
    DEFAULT_WORKLOAD,
    WORKLOAD_PRESETS,
    MinPoints,
    Threshold,
    ThresholdMode,
    Windows,
    WorkloadSettings,
)
from regbot.errors import InputError
from regbot.settings_fields import Bound, Form, NotInConfig

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T")
Read = Callable[["Reader", object, str], object]


class Reader:
    """Where messages point (``file:line: dotted.key``), and what relative paths are anchored to."""

    def __init__(self, source: str, base_dir: Path, lines: Mapping[str, int]) -> None:
        self.source = source
        self.base_dir = base_dir
        self.lines = lines

    def where(self, key: str) -> str:
        line = self.lines.get(key)
        return f"{self.source}:{line}: {key}" if line else f"{self.source}: {key}"

    def section(self, value: object, key: str, allowed: tuple[str, ...]) -> dict[str, object]:
        """A mapping with only ``allowed`` keys (None counts as empty)."""
        if value is None:
            return {}
        if not isinstance(value, dict):
            where = self.where(key) if key else self.source
            raise InputError(where, "a mapping (key: value)", value)
        for name in value:
            child = f"{key}.{name}" if key else str(name)
            if not isinstance(name, str):
                raise InputError(self.where(child), "a key that is text", name)
            if name not in allowed:
                expected = "one of " + ", ".join(allowed)
                raise InputError(f"{self.where(child)}: unknown key", expected)
        return value

    def take(
        self,
        mapping: Mapping[str, object],
        key: str,
        name: str,
        convert: Callable[[object, str], T],
        default: T,
    ) -> T:
        """``mapping[name]`` converted, or ``default`` when absent or null."""
        value = mapping.get(name)
        if value is None:
            return default
        return convert(value, self.where(f"{key}.{name}" if key else name))

    def path(self, value: object, key: str) -> Path:
        """A path, a relative one anchored at the config file's directory."""
        return self.base_dir / Path(values.text(value, self.where(key))).expanduser()

    def paths(self, value: object, key: str) -> tuple[Path, ...]:
        """One path or a list of them."""
        if not isinstance(value, list):
            return (self.path(value, key),)
        return tuple(self.path(item, f"{key}[{i}]") for i, item in enumerate(value))


@dataclass(frozen=True, slots=True)
class ReadWith:
    """A field read by its own function ``read(reader, value, dotted_key)``."""

    read: Read


# --- a field's reading, from its annotation --------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Key:
    """One declared key of a section: the field it fills, how it is read, whether it is read
    even when not written (a section), whether it must be written, and its default."""

    field: str
    read: Read
    always: bool
    required: bool
    default: object


def _plain(convert: Callable[[object, str], object]) -> Read:
    return lambda r, value, key: convert(value, r.where(key))


def _reading(hint: Any, name: str, default: object, owner: type) -> tuple[Read, bool]:
    """How a field of type ``hint`` named ``name`` is read, and whether it is a section (read
    even when not written)."""
    markers: tuple[object, ...] = ()
    if get_origin(hint) is Annotated:
        hint, markers = get_args(hint)[0], tuple(hint.__metadata__)
    custom = [m for m in markers if isinstance(m, ReadWith)]
    if custom:
        return custom[0].read, False
    bounds = tuple(m for m in markers if isinstance(m, Bound))
    form = next((m.kind for m in markers if isinstance(m, Form)), None)
    origin, args = get_origin(hint), get_args(hint)
    duration = name.endswith("_s")
    if origin in (Union, types.UnionType):
        present = [a for a in args if a is not type(None)]
        if len(present) == 1:
            return _reading(present[0], name, default, owner)[0], False
    elif isinstance(hint, type) and is_dataclass(hint):
        return _section_reader(hint), True
    elif hint is bool:
        return _plain(values.boolean), False
    elif hint is int:
        return _plain(values.bounded(values.count, bounds)), False
    elif hint is float:
        number = values.duration if duration else values.number
        return _plain(values.bounded(number, bounds)), False
    elif hint is str:
        return _plain(values.TEXT_FORMS[form] if form else values.text), False
    elif hint is Path:
        return Reader.path, False
    elif origin is Literal:
        choices = tuple(str(a) for a in args)
        return _plain(lambda value, where: values.one_of(value, where, choices)), False
    elif origin is frozenset and args == (str,):
        return _plain(values.words), False
    elif origin is tuple and form == "band":
        return _plain(values.band), False
    elif origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = args[0]
        if item is Path:
            return Reader.paths, False
        if item is float and duration:
            return _plain(values.durations), False
        if isinstance(item, type) and is_dataclass(item):
            return _list_reader(item, default), False
    raise TypeError(f"{owner.__name__}.{name}: no regbot.yml reading for {hint!r}")


def _section_reader(cls: type) -> Read:
    return lambda r, value, key: read_section(r, cls, value, key)


def _list_reader(cls: type, default: object) -> Read:
    """A list of sections; with a ``name`` field, each name distinct; empty: the default."""
    named = any(f.name == "name" for f in _fields(cls))

    def read(r: Reader, value: object, key: str) -> object:
        if not isinstance(value, list):
            raise InputError(r.where(key), "a list", value)
        items: tuple[Any, ...] = tuple(
            read_section(r, cls, item, f"{key}[{i}]") for i, item in enumerate(value)
        )
        if named:
            names = [item.name for item in items]
            for i, name in enumerate(names):
                if name in names[:i]:
                    raise InputError(r.where(f"{key}[{i}].name"), "a name not used before", name)
        return items or default

    return read


def _fields(cls: type) -> tuple[Field[Any], ...]:
    return fields(cast("type[DataclassInstance]", cls))


def _default(f: Field[Any]) -> object:
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return MISSING


@cache
def _keys(cls: type) -> dict[str, _Key]:
    """The YAML keys of a settings dataclass, in field order."""
    hints = get_type_hints(cls, include_extras=True)
    keys: dict[str, _Key] = {}
    for f in _fields(cls):
        hint = hints[f.name]
        if get_origin(hint) is Annotated and any(
            isinstance(m, NotInConfig) for m in hint.__metadata__
        ):
            continue
        if not f.init:
            continue
        default = _default(f)
        read, always = _reading(hint, f.name, default, cls)
        keys[f.name.removesuffix("_s")] = _Key(f.name, read, always, default is MISSING, default)
    return keys


def read_section(r: Reader, cls: type[T], value: object, key: str, **given: object) -> T:
    """Build ``cls`` from a YAML mapping by its fields' declarations; absent or null keys keep
    the field's default; ``given`` fills fields that are not YAML keys."""
    declared = _keys(cast(type, cls))
    mapping = r.section(value, key, tuple(declared))
    for name, declared_key in declared.items():
        child = f"{key}.{name}" if key else name
        item = mapping.get(name)
        if item is not None or declared_key.always:
            given[declared_key.field] = declared_key.read(r, item, child)
        elif declared_key.required:
            raise InputError(r.where(key), f"a value for {name}")
        elif isinstance(declared_key.default, Path):
            given[declared_key.field] = r.base_dir / declared_key.default
    return cast(Callable[..., T], cls)(**given)


def config_keys(cls: type, prefix: str = "") -> list[str]:
    """Every dotted key a settings dataclass accepts, sections and lists of sections walked
    (``dedup.rules[0].feature``); a field read by its own function is listed, not walked."""
    hints = get_type_hints(cls, include_extras=True)
    found: list[str] = []
    for name, declared_key in _keys(cls).items():
        path = f"{prefix}.{name}" if prefix else name
        found.append(path)
        hint = hints[declared_key.field]
        if get_origin(hint) is Annotated:
            if any(isinstance(m, ReadWith) for m in hint.__metadata__):
                continue
            hint = get_args(hint)[0]
        args = get_args(hint)
        if isinstance(hint, type) and is_dataclass(hint):
            found += config_keys(hint, path)
        elif get_origin(hint) is tuple and len(args) == 2 and args[1] is Ellipsis:
            if isinstance(args[0], type) and is_dataclass(args[0]):
                found += config_keys(args[0], f"{path}[0]")
        elif get_origin(hint) in (Union, types.UnionType):
            for arg in args:
                if isinstance(arg, type) and is_dataclass(arg):
                    found += config_keys(arg, path)
    return found


# --- workloads: presets and the built-in default as the base of each --------------------------


def default_workloads() -> dict[str, WorkloadSettings]:
    return {"default": DEFAULT_WORKLOAD}


def read_workloads(r: Reader, value: object, key: str) -> dict[str, WorkloadSettings]:
    if not isinstance(value, dict):
        raise InputError(r.where(key), "a mapping of workload names to settings", value)
    workloads = default_workloads()
    for name, settings in value.items():
        if not isinstance(name, str) or not name:
            raise InputError(r.where(f"{key}.{name}"), "a workload name (text)", name)
        workloads[name] = _workload(r, settings, f"{key}.{name}")
    return workloads


def _workload(r: Reader, value: object, key: str) -> WorkloadSettings:
    d = r.section(value, key, ("preset", "threshold", "windows", "rerun_interval"))
    presets = tuple(WORKLOAD_PRESETS)
    preset = r.take(d, key, "preset", lambda v, w: values.one_of(v, w, presets), None)
    base = WORKLOAD_PRESETS[preset] if preset else DEFAULT_WORKLOAD
    threshold = d.get("threshold")
    at, at_threshold = f"{key}.windows", f"{key}.threshold"
    duration, or_zero = values.duration, values.duration_or_zero
    windows = r.section(d.get("windows"), at, ("historical", "analysis", "extended", "min_points"))
    return WorkloadSettings(
        threshold=base.threshold if threshold is None else _threshold(r, threshold, at_threshold),
        windows=Windows(
            historical_s=r.take(windows, at, "historical", duration, base.windows.historical_s),
            analysis_s=r.take(windows, at, "analysis", duration, base.windows.analysis_s),
            extended_s=r.take(windows, at, "extended", or_zero, base.windows.extended_s),
            min_points=_min_points(r, windows.get("min_points"), f"{at}.min_points", base),
        ),
        rerun_interval_s=r.take(d, key, "rerun_interval", duration, base.rerun_interval_s),
        preset=preset,
    )


def _min_points(r: Reader, value: object, key: str, base: WorkloadSettings) -> MinPoints:
    """``windows.min_points``: the fewest points per window (``{historical: 120, analysis: 6,
    extended: 6}``), field by field over the base workload's (12 / 6 / 6 by default); each a
    whole number >= 1, as a window always holds at least one point."""
    d = r.section(value, key, ("historical", "analysis", "extended"))
    given = base.windows.min_points
    at_least_one = values.bounded(values.count, (Bound("a whole number >= 1", low=1.0),))
    return MinPoints(
        historical=r.take(d, key, "historical", at_least_one, given.historical),
        analysis=r.take(d, key, "analysis", at_least_one, given.analysis),
        extended=r.take(d, key, "extended", at_least_one, given.extended),
    )


def _threshold(r: Reader, value: object, key: str) -> Threshold:
    d = r.section(value, key, ("absolute", "relative"))
    given = [mode for mode in ("absolute", "relative") if d.get(mode) is not None]
    if len(given) != 1:
        raise InputError(r.where(key), "exactly one of absolute, relative", value)
    mode: ThresholdMode = "absolute" if given == ["absolute"] else "relative"
    return Threshold(mode, values.non_negative(d[mode], r.where(f"{key}.{mode}")))
