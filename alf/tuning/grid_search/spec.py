"""Search configs (ALF's grid-search JSON), checked and expanded into runs.

A search config is a JSON object::

    {
      "desc": "PPO: learning rate and width",
      "parameters": {
        "Adam.lr": [0.001, 0.0003],
        "ActorDistributionNetwork.fc_layer_params,ValueNetwork.fc_layer_params":
            [[[64], [64]], [[128, 128], [128, 128]]]
      },
      "repeats": 2,
      "max_worker_num": 4
    }

Each key of ``parameters`` names a configurable argument (``Name.arg``, as for
``--conf_param``) and lists its values; a key joining several names with commas lists
tuples of values, one per name, that vary together. The grid is the Cartesian product of
the keys, times ``repeats``. ``desc`` and ``comment`` are free text; ALF's ``use_gpu`` and
``gpus`` are accepted and ignored (every run is on the CPU); any other key is an error.

Values are taken as JSON gives them: numbers, booleans, null, lists, objects, and strings,
which stay strings. ALF evaluates a string as Python (``"range(3)"``, ``"(0.99, 0.995)"``);
alf never evaluates anything, and refuses a string that looks like such an expression
(``range(...)``, ``[...``, ``(...``, ``{...``, a number, ``True``/``False``/``None``)
rather than pass it on as a string by surprise: write the list or the value in JSON.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import itertools
import json
import math
import re

from alf.configuration.registry import NAME_RE

KNOWN_KEYS = ("desc", "comment", "parameters", "repeats", "max_worker_num")
IGNORED_KEYS = ("use_gpu", "gpus")
SEED_NAME = "TrainerConfig.random_seed"
MAX_LABEL_LENGTH = 80
"""Longest run name before its ``-r<repeat>`` suffix; longer ones end in a hash."""

_UNSAFE_RE = re.compile(r"[^A-Za-z0-9._+=-]+")
_EXPRESSION_STARTS = ("range(", "[", "(", "{")


class SearchConfigError(ValueError):
    """A search config alf refuses; the message names the file and the key."""


@dataclasses.dataclass(frozen=True)
class Axis:
    """One key of ``parameters``: its names and, per grid point, one value per name."""

    names: tuple[str, ...]
    points: tuple[tuple, ...]


@dataclasses.dataclass
class SearchSpec:
    """A checked search config."""

    path: str
    raw: dict
    desc: str
    axes: list[Axis]
    repeats: int
    max_worker_num: int | None
    warnings: list[str]

    @property
    def names(self) -> list[str]:
        """Every parameter name, in the order of the config."""
        return [name for axis in self.axes for name in axis.names]


@dataclasses.dataclass
class Run:
    """One training run of the grid."""

    name: str
    parameters: dict
    repeat: int
    random_seed: int | None
    conf_params: list[str]
    """The run's own ``--conf_param`` values: its parameters, then its seed if set."""


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a JSON value")


def _unique_keys(pairs: list) -> dict:
    counts = collections.Counter(key for key, _ in pairs)
    repeated = [key for key, count in counts.items() if count > 1]
    if repeated:
        raise ValueError(f"key {repeated[0]!r} appears more than once")
    return dict(pairs)


def load_search_config(path: str) -> SearchSpec:
    """Read and check the search config file at ``path``.

    Raises:
        SearchConfigError: an unreadable file, invalid JSON or a refused config (see
            ``parse_search_config``); the message names the file.
    """
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f, parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
    except OSError as e:
        raise SearchConfigError(f"search config {path}: {e.strerror or e}") from e
    except ValueError as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise SearchConfigError(f"search config {path} is not valid JSON: {e}") from e
    return parse_search_config(raw, path)


def parse_search_config(raw, path: str) -> SearchSpec:
    """Check a search config read from ``path`` (see the module doc).

    Raises:
        SearchConfigError: unknown keys, a ``parameters`` key that is not a config name or
            whose values are not a non-empty JSON list, a value ALF would evaluate, a
            repeated value or name, or a bad ``repeats`` / ``max_worker_num``.
    """
    if not isinstance(raw, dict):
        raise SearchConfigError(f"search config {path} must hold a JSON object")
    unknown = [key for key in raw if key not in KNOWN_KEYS + IGNORED_KEYS]
    if unknown:
        raise SearchConfigError(
            f"search config {path}: unknown key(s) {', '.join(map(repr, unknown))} "
            f"(known: {', '.join(KNOWN_KEYS + IGNORED_KEYS)})"
        )
    desc = raw.get("desc", "")
    if not isinstance(desc, str):
        raise SearchConfigError(f"search config {path}: 'desc' must be a string")
    parameters = raw.get("parameters", {})
    if not isinstance(parameters, dict):
        raise SearchConfigError(f"search config {path}: 'parameters' must be a JSON object")
    axes = [_axis(path, key, values) for key, values in parameters.items()]
    names = collections.Counter(name for axis in axes for name in axis.names)
    for name, count in names.items():
        if count > 1:
            raise SearchConfigError(f"search config {path}: parameter {name!r} is given twice")
    warnings = [
        f"search config {path}: {key!r} is ignored (alf's grid search runs on the CPU)"
        for key in IGNORED_KEYS
        if key in raw
    ]
    return SearchSpec(
        path=path,
        raw=raw,
        desc=desc,
        axes=axes,
        repeats=_positive_int(raw, "repeats", path, 1),
        max_worker_num=_positive_int(raw, "max_worker_num", path, None),
        warnings=warnings,
    )


def _positive_int(raw: dict, key: str, path: str, default):
    value = raw.get(key, default)
    if value is default:
        return value
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise SearchConfigError(
            f"search config {path}: {key!r} must be a positive integer, got {json.dumps(value)}"
        )
    return value


def _axis(path: str, key: str, values) -> Axis:
    where = f"search config {path}: parameter {key!r}"
    names = tuple(name.strip() for name in key.split(","))
    for name in names:
        if not NAME_RE.fullmatch(name):
            raise SearchConfigError(f"{where}: {name!r} is not a config name like 'Name.arg'")
    if len(set(names)) < len(names):
        raise SearchConfigError(f"{where} names the same config twice")
    if isinstance(values, str):
        raise SearchConfigError(f"{where}: {_evaluated_message(values, 'the list')}")
    if not isinstance(values, list) or not values:
        raise SearchConfigError(
            f"{where} must be a non-empty JSON list of values, got {json.dumps(values)}"
        )
    points = []
    for item in values:
        if len(names) == 1:
            point = (item,)
        elif isinstance(item, list) and len(item) == len(names):
            point = tuple(item)
        else:
            raise SearchConfigError(
                f"{where}: each value must be a list of {len(names)} values (one per name), "
                f"got {json.dumps(item)}"
            )
        for value in point:
            _check_value(where, value)
        points.append(point)
    seen = set()
    for point in points:
        text = json.dumps(point)
        if text in seen:
            shown = json.dumps(point[0]) if len(names) == 1 else text
            raise SearchConfigError(f"{where} lists the value {shown} twice")
        seen.add(text)
    return Axis(names, tuple(points))


def _check_value(where: str, value) -> None:
    if isinstance(value, str) and looks_like_expression(value):
        raise SearchConfigError(f"{where}: {_evaluated_message(value, 'the value')}")
    if isinstance(value, float) and not math.isfinite(value):
        raise SearchConfigError(f"{where}: {value} is not a finite number")
    if isinstance(value, list):
        for item in value:
            _check_nested(where, item)
    elif isinstance(value, dict):
        for item in value.values():
            _check_nested(where, item)


def _check_nested(where: str, value) -> None:
    if isinstance(value, (list, dict, float)):
        _check_value(where, value)


def _evaluated_message(text: str, what: str) -> str:
    return (
        f"the string {json.dumps(text)} is a Python expression ALF would evaluate; "
        f"alf does not evaluate strings: write {what} in JSON"
    )


def looks_like_expression(text: str) -> bool:
    """Whether ALF would evaluate ``text`` to something other than a string.

    True for ``range(...)``, text starting with ``[``, ``(`` or ``{``, a number (anything
    ``float`` or ``int(text, 0)`` reads, e.g. ``"1e-3"``, ``"0x10"``, ``"inf"``), and
    ``True`` / ``False`` / ``None``.
    """
    text = text.strip()
    if text.startswith(_EXPRESSION_STARTS) or text in ("True", "False", "None"):
        return True
    for parse in (float, lambda t: int(t, 0)):
        try:
            parse(text)
        except ValueError:
            continue
        return True
    return False


def value_literal(value) -> str:
    """``value`` (a JSON value) as the Python literal ``--conf_param`` reads back.

    Strings are quoted, ``true``/``false``/``null`` become ``True``/``False``/``None``,
    lists stay lists and objects become dicts.
    """
    return repr(value)


def conf_param(name: str, value) -> str:
    """The ``--conf_param`` string ``'name=<literal>'`` setting ``name`` to ``value``."""
    return f"{name}={value_literal(value)}"


def settings(spec: SearchSpec) -> list[dict]:
    """The grid points: ``{name: value}`` for each combination of the axes' points."""
    result = []
    for combination in itertools.product(*(axis.points for axis in spec.axes)):
        setting = {}
        for axis, point in zip(spec.axes, combination):
            setting.update(zip(axis.names, point))
        result.append(setting)
    return result


def short_names(names: list[str]) -> dict[str, str]:
    """The shortest dot-suffix of each name that no other name shares (``Adam.lr`` → ``lr``,
    but ``Adam.lr`` and ``SGD.lr`` keep ``Adam.lr`` and ``SGD.lr``)."""
    parts = {name: name.split(".") for name in names}
    depth = dict.fromkeys(names, 1)
    while True:
        short = {name: ".".join(parts[name][-depth[name] :]) for name in names}
        counts = collections.Counter(short.values())
        clashing = [n for n in names if counts[short[n]] > 1 and depth[n] < len(parts[n])]
        if not clashing:
            return short
        for name in clashing:
            depth[name] += 1


def name_token(value) -> str:
    """``value`` as a filesystem-safe piece of a run name (``[64, 64]`` → ``64_64``)."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, (list, dict)):
        text = json.dumps(value, separators=(",", ":"))
    else:
        text = repr(value)
    return _UNSAFE_RE.sub("_", text).strip("_") or "_"


def setting_digest(setting: dict) -> str:
    """A hex digest identifying ``setting`` (its names, values and their JSON types)."""
    return hashlib.sha256(json.dumps(list(setting.items())).encode()).hexdigest()


def setting_labels(points: list[dict]) -> list[str]:
    """Unique, filesystem-safe names of the grid points, e.g. ``lr=0.001-units=64``.

    A label longer than ``MAX_LABEL_LENGTH``, or one two points would share after their
    values are made safe (``a/b`` and ``a b`` both give ``a_b``), is cut and ends with
    ``-`` and 8 hex digits of the point's digest.
    """
    if not points:
        return []
    short = short_names(list(points[0]))
    labels = [
        "-".join(f"{short[name]}={name_token(value)}" for name, value in point.items())
        for point in points
    ]
    counts = collections.Counter(labels)
    result = []
    for point, label in zip(points, labels):
        if counts[label] > 1 or len(label) > MAX_LABEL_LENGTH:
            label = f"{label[: MAX_LABEL_LENGTH - 9]}-{setting_digest(point)[:8]}"
        result.append(label)
    if len(set(result)) < len(result):
        raise SearchConfigError("two grid points got the same run name; rename a value")
    return result


def is_seed_name(name: str) -> bool:
    """Whether the config name ``name`` is ``TrainerConfig.random_seed`` (or a longer form)."""
    return name == SEED_NAME or name.endswith("." + SEED_NAME)


def expand(spec: SearchSpec, seed_base: int | None = None) -> list[Run]:
    """The runs of the grid: every grid point for repeat 0, then for repeat 1, and so on.

    Args:
        spec: the search config.
        seed_base: when not None, repeat ``r`` of every point runs with
            ``TrainerConfig.random_seed = seed_base + r``; when None, the runs get no seed
            from the grid search.
    """
    points = settings(spec)
    labels = setting_labels(points)
    runs = []
    for repeat in range(spec.repeats):
        seed = None if seed_base is None else seed_base + repeat
        for point, label in zip(points, labels):
            params = [conf_param(name, value) for name, value in point.items()]
            if seed is not None:
                params.append(conf_param(SEED_NAME, seed))
            name = f"{label}-r{repeat}" if label else f"r{repeat}"
            runs.append(Run(name, dict(point), repeat, seed, params))
    return runs
