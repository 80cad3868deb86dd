"""Typed, bounded mutations of hyperparameters, declared as data.

A ``Mutation`` names one configurable argument in ALF's ``Name.arg`` form
(``"Adam.lr"``, ``"PPOLoss.entropy_regularization"``) and says how its value may
change:

``perturb``
    a float multiplied or divided (each with probability 1/2) by a factor drawn
    from U(change_min, change_max), then clipped to the optional ``min`` / ``max``.
``discount``
    a discount factor gamma in (0, 1): ``1 - gamma`` is perturbed as above, so gamma
    never reaches 0 or 1; the optional ``min`` / ``max`` bound gamma itself.
``int``
    an int moved up or down by ``step`` (default 1); with ``multiply: true`` it is
    first multiplied or divided by a factor from U(change_min, change_max) and
    rounded (the step is used when rounding gives back the old value); clipped to
    the optional ``min`` / ``max``.
``choice``
    one of ``values`` (at least two distinct JSON scalars) other than the current one.

``perturb``, ``discount`` and ``int`` may override the global ``change_min`` and
``change_max`` with keys of the same names.

Specs come from a Python conf (``mutations_from_config``) or a JSON / YAML file
(``load_mutations``), either a mapping ``{name: {kind: ..., key: value}}`` (a bare
kind string stands for ``{kind: <string>}``) or a list of ``{name: ..., kind: ...,
key: value}``. Nothing is evaluated and no function is looked up by name: a file
holds only data. Every error (unknown kind or key, a bad bound, a wrong type) is a
``ValueError`` naming the argument and the key.

``mutate`` returns new values: each value mutates with probability
``mutation_rate``, at least one value always changes, and a changed value always
differs from the old one (a value at its bound is moved the other way). The
result depends only on the inputs and the state of the ``random.Random`` given.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

KINDS = ("perturb", "discount", "int", "choice")

DEFAULT_MUTATION_RATE = 0.15
DEFAULT_CHANGE_MIN = 1.1
DEFAULT_CHANGE_MAX = 1.5

_CHANGE_KEYS = ("change_min", "change_max")
_KEYS = {
    "perturb": ("min", "max", *_CHANGE_KEYS),
    "discount": ("min", "max", *_CHANGE_KEYS),
    "int": ("min", "max", "step", "multiply", *_CHANGE_KEYS),
    "choice": ("values",),
}
_DEFAULTS = {
    "min": None,
    "max": None,
    "step": 1,
    "multiply": False,
    "values": (),
    "change_min": None,
    "change_max": None,
}
_NAME_RE = re.compile(r"^[A-Za-z_]\w*(?:[./][A-Za-z_]\w*)*\.[A-Za-z_]\w*$")


def _is_real(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_scalar(value) -> bool:
    return value is None or isinstance(value, (str, bool, int, float))


def _equal(a, b) -> bool:
    """``a == b``, except that a bool equals only the same bool (``True != 1`` here)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    return a == b


def _type_error(name: str, key: str, expected: str, value) -> ValueError:
    hint = ""
    if isinstance(value, str):
        try:
            float(value)
            hint = " (YAML reads a number like 1e-5 as a string: write 1.0e-5)"
        except ValueError:
            pass
    return ValueError(
        f"Mutation {name!r}: {key} must be {expected}, got {value!r} ({type(value).__name__})"
        + hint
    )


@dataclass(frozen=True)
class Mutation:
    """How the value of one configurable argument may mutate (see the module doc).

    Args:
        name: the argument, as ``"Name.arg"`` (``"Adam.lr"``).
        kind: one of ``perturb``, ``discount``, ``int``, ``choice``.
        min: lower bound (perturb, discount, int), inclusive.
        max: upper bound (perturb, discount, int), inclusive.
        step: the amount an ``int`` moves by (>= 1).
        multiply: an ``int`` is multiplied or divided rather than stepped.
        values: the values a ``choice`` picks from.
        change_min: this argument's own ``change_min`` (>= 1).
        change_max: this argument's own ``change_max`` (> 1, >= change_min).

    Raises:
        ValueError: a key that does not apply to the kind, a wrong type or a bad
            bound (the message names the argument and the key).
    """

    name: str
    kind: str
    min: float | None = None
    max: float | None = None
    step: int = 1
    multiply: bool = False
    values: tuple = field(default=())
    change_min: float | None = None
    change_max: float | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not _NAME_RE.match(self.name):
            raise ValueError(f"Mutation name must look like 'Name.arg', got {self.name!r}")
        if self.kind not in KINDS:
            raise ValueError(
                f"Mutation {self.name!r}: unknown kind {self.kind!r} (one of {', '.join(KINDS)})"
            )
        if isinstance(self.values, list):
            object.__setattr__(self, "values", tuple(self.values))
        for key, default in _DEFAULTS.items():
            if key not in _KEYS[self.kind] and getattr(self, key) != default:
                raise ValueError(
                    f"Mutation {self.name!r}: key {key!r} does not apply to kind {self.kind!r} "
                    f"(its keys: {', '.join(_KEYS[self.kind])})"
                )
        if self.kind == "choice":
            self._check_values()
        else:
            self._check_bounds()
            _check_changes(self.change_min, self.change_max, f"Mutation {self.name!r}: ")
        if self.kind == "int":
            self._check_int_keys()

    def _check_bounds(self) -> None:
        number = "an int" if self.kind == "int" else "a number"
        for key in ("min", "max"):
            value = getattr(self, key)
            if value is None:
                continue
            ok = isinstance(value, int) if self.kind == "int" else _is_real(value)
            if not ok or isinstance(value, bool) or not math.isfinite(value):
                raise _type_error(self.name, key, f"{number} or null", value)
            if self.kind == "discount" and not 0.0 < value < 1.0:
                raise ValueError(
                    f"Mutation {self.name!r}: {key} of a discount must be in (0, 1), got {value}"
                )
        if self.min is not None and self.max is not None and not self.min < self.max:
            raise ValueError(f"Mutation {self.name!r}: min ({self.min}) must be < max ({self.max})")

    def _check_int_keys(self) -> None:
        if not isinstance(self.step, int) or isinstance(self.step, bool) or self.step < 1:
            raise _type_error(self.name, "step", "an int >= 1", self.step)
        if not isinstance(self.multiply, bool):
            raise _type_error(self.name, "multiply", "true or false", self.multiply)

    def _check_values(self) -> None:
        values = self.values
        if not isinstance(values, tuple) or len(values) < 2:
            raise _type_error(self.name, "values", "a list of at least 2 values", values)
        for i, value in enumerate(values):
            if not _is_scalar(value) or (isinstance(value, float) and not math.isfinite(value)):
                raise _type_error(self.name, f"values[{i}]", "a JSON scalar", value)
            if any(_equal(value, other) for other in values[:i]):
                raise ValueError(f"Mutation {self.name!r}: values[{i}] ({value!r}) is repeated")

    def to_dict(self) -> dict:
        """The spec as a plain dict (``name``, ``kind`` and the keys not at their defaults)."""
        result = {"name": self.name, "kind": self.kind}
        for key in _KEYS[self.kind]:
            value = getattr(self, key)
            if value != _DEFAULTS[key]:
                result[key] = list(value) if isinstance(value, tuple) else value
        return result


def _check_changes(change_min, change_max, where: str = "") -> None:
    """Raise ``ValueError`` unless change_min >= 1, change_max > 1 and change_max >= change_min
    (either may be None: not given)."""
    for key, value in (("change_min", change_min), ("change_max", change_max)):
        if value is None:
            continue
        if not _is_real(value) or not math.isfinite(value):
            raise ValueError(f"{where}{key} must be a number, got {value!r}")
    if change_min is not None and change_min < 1:
        raise ValueError(f"{where}change_min must be >= 1, got {change_min}")
    if change_max is not None and change_max <= 1:
        raise ValueError(f"{where}change_max must be > 1, got {change_max}")
    if change_min is not None and change_max is not None and change_max < change_min:
        raise ValueError(f"{where}change_max ({change_max}) must be >= change_min ({change_min})")


def mutation_from_dict(name: str, spec: Mapping[str, Any]) -> Mutation:
    """One ``Mutation`` from a plain dict ``{kind: ..., key: value}`` for argument ``name``.

    Raises:
        ValueError: no or unknown kind, unknown keys, or a bad value (naming ``name`` and
            the key).
    """
    if isinstance(spec, str):
        spec = {"kind": spec}
    if not isinstance(spec, Mapping):
        raise ValueError(f"Mutation {name!r}: must be a mapping or a kind, got {spec!r}")
    kind = spec.get("kind")
    if kind is None:
        raise ValueError(f"Mutation {name!r}: key 'kind' is missing (one of {', '.join(KINDS)})")
    if kind not in KINDS:
        raise ValueError(f"Mutation {name!r}: unknown kind {kind!r} (one of {', '.join(KINDS)})")
    unknown = [k for k in spec if k not in ("name", "kind", *_KEYS[kind])]
    if unknown:
        raise ValueError(
            f"Mutation {name!r}: unknown key {unknown[0]!r} for kind {kind!r} "
            f"(its keys: {', '.join(_KEYS[kind])})"
        )
    if "name" in spec and spec["name"] != name:
        raise ValueError(f"Mutation {name!r}: key 'name' says {spec['name']!r}")
    kwargs = {k: v for k, v in spec.items() if k not in ("name", "kind")}
    if "values" in kwargs and isinstance(kwargs["values"], list):
        kwargs["values"] = tuple(kwargs["values"])
    return Mutation(name=name, kind=kind, **kwargs)


def mutations_from_config(config) -> list[Mutation]:
    """The ``Mutation`` list described by ``config`` (from a Python conf or a parsed file).

    Args:
        config: a mapping ``{"Name.arg": {"kind": ..., ...}}`` (a value may be just the
            kind), a list of ``{"name": "Name.arg", "kind": ..., ...}``, or a list of
            ``Mutation``.

    Raises:
        ValueError: a malformed entry or an argument given twice.
    """
    if isinstance(config, Mapping):
        items = list(config.items())
    elif isinstance(config, (list, tuple)):
        items = []
        for i, entry in enumerate(config):
            if isinstance(entry, Mutation):
                items.append((entry.name, entry))
            elif isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
                items.append((entry["name"], entry))
            else:
                raise ValueError(
                    f"mutation entry {i} must be a mapping with a 'name', got {entry!r}"
                )
    else:
        raise ValueError(f"mutations must be a mapping or a list, got {type(config).__name__}")
    result, seen = [], set()
    for name, spec in items:
        mutation = spec if isinstance(spec, Mutation) else mutation_from_dict(name, spec)
        if mutation.name != name:
            raise ValueError(f"Mutation {mutation.name!r} is listed under {name!r}")
        if mutation.name in seen:
            raise ValueError(f"Mutation {mutation.name!r} is given twice")
        seen.add(mutation.name)
        result.append(mutation)
    return result


def _reject_constant(token: str):
    raise ValueError(f"{token} is not valid JSON")


def load_mutations(path: str) -> list[Mutation]:
    """Read a mutation file: JSON (``.json``) or YAML (``.yaml``, ``.yml``, via
    ``yaml.safe_load``; PyYAML is imported only then).

    Raises:
        ValueError: unreadable or malformed file, or a bad spec (naming the file).
        ImportError: a YAML file and PyYAML is not installed.
    """
    extension = os.path.splitext(path)[1].lower()
    if extension not in (".json", ".yaml", ".yml"):
        raise ValueError(f"mutation file {path}: expected a .json, .yaml or .yml file")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ValueError(f"mutation file {path} cannot be read: {e.strerror}") from e
    if extension == ".json":
        try:
            data = json.loads(text, parse_constant=_reject_constant)
        except ValueError as e:
            raise ValueError(f"mutation file {path} is not valid JSON: {e}") from e
    else:
        try:
            import yaml
        except ImportError:
            raise ImportError(
                f"reading {path} needs PyYAML (pip install pyyaml, or alf[pbt])"
            ) from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            reason = str(e).replace("\n", " ")
            raise ValueError(f"mutation file {path} is not valid YAML: {reason}") from e
    try:
        return mutations_from_config(data)
    except ValueError as e:
        raise ValueError(f"mutation file {path}: {e}") from e


def _clip(value, low, high):
    if low is not None and value < low:
        return low
    if high is not None and value > high:
        return high
    return value


def _factor(spec: Mutation, rng: random.Random, change_min: float, change_max: float):
    low = change_min if spec.change_min is None else spec.change_min
    high = change_max if spec.change_max is None else spec.change_max
    high = max(high, low)
    return rng.uniform(low, high), high


def _perturb(spec: Mutation, value, rng, change_min, change_max):
    factor, largest = _factor(spec, rng, change_min, change_max)
    up = rng.random() < 0.5
    for f, multiply in ((factor, up), (factor, not up), (largest, up), (largest, not up)):
        new = float(_clip(value * f if multiply else value / f, spec.min, spec.max))
        if new != value:
            return new
    return None


def _discount(spec: Mutation, value, rng, change_min, change_max):
    factor, largest = _factor(spec, rng, change_min, change_max)
    up = rng.random() < 0.5
    horizon = 1.0 - value
    for f, multiply in ((factor, up), (factor, not up), (largest, up), (largest, not up)):
        new = 1.0 - (horizon * f if multiply else horizon / f)
        new = float(_clip(new, spec.min, spec.max))
        if 0.0 < new < 1.0 and new != value:
            return new
    return None


def _int(spec: Mutation, value, rng, change_min, change_max):
    factor = _factor(spec, rng, change_min, change_max)[0] if spec.multiply else None
    up = rng.random() < 0.5
    for direction in (up, not up):
        new = None
        if factor is not None:
            new = round(value * factor) if direction else round(value / factor)
        if new is None or new == value:
            new = value + spec.step if direction else value - spec.step
        new = int(_clip(new, spec.min, spec.max))
        if new != value:
            return new
    return None


def _choice(spec: Mutation, value, rng, change_min, change_max):
    others = [v for v in spec.values if not _equal(v, value)]
    return rng.choice(others) if others else None


_MUTATORS = {"perturb": _perturb, "discount": _discount, "int": _int, "choice": _choice}


def _check_value(spec: Mutation, value) -> None:
    where = f"value of {spec.name!r}"
    if spec.kind in ("perturb", "discount"):
        if not _is_real(value) or not math.isfinite(value):
            raise ValueError(f"{where} must be a finite number, got {value!r}")
        if spec.kind == "perturb" and value == 0:
            raise ValueError(f"{where} is 0: a perturbation (a factor) cannot change it")
        if spec.kind == "discount" and not 0.0 < value < 1.0:
            raise ValueError(f"{where} must be a discount in (0, 1), got {value!r}")
    elif spec.kind == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"{where} must be an int, got {value!r} ({type(value).__name__})")
    elif not _is_scalar(value):
        raise ValueError(f"{where} must be a JSON scalar, got {value!r}")


def mutate(
    values: Mapping[str, Any],
    specs: Iterable[Mutation],
    rng: random.Random,
    mutation_rate: float = DEFAULT_MUTATION_RATE,
    change_min: float = DEFAULT_CHANGE_MIN,
    change_max: float = DEFAULT_CHANGE_MAX,
) -> dict:
    """New hyperparameter values: ``values`` with some of the ``specs``' arguments mutated.

    Each spec's value mutates with probability ``mutation_rate`` (specs are visited in
    order, so a seeded ``rng`` gives the same result). When none was chosen, one spec is
    picked uniformly at random, so every call changes at least one value; a changed value
    always differs from the old one. Entries of ``values`` no spec names are copied.

    Args:
        values: current values by argument name; every spec's argument must be there.
        specs: the ``Mutation`` of each mutable argument.
        rng: the random number generator drawn from.
        mutation_rate: probability that a value mutates, in [0, 1].
        change_min: smallest perturbation factor (>= 1), unless a spec sets its own.
        change_max: largest perturbation factor (> 1, >= change_min).

    Returns:
        a new dict; ``values`` is not modified.
    Raises:
        ValueError: bad rates, a spec's value missing or of the wrong type, or no value
            that can change at all.
    """
    if not _is_real(mutation_rate) or not 0.0 <= mutation_rate <= 1.0:
        raise ValueError(f"mutation_rate must be in [0, 1], got {mutation_rate!r}")
    if change_min is None or change_max is None:
        raise ValueError(f"change_min and change_max must be numbers, got {change_min, change_max}")
    _check_changes(change_min, change_max)
    specs = list(specs)
    if not specs:
        raise ValueError("mutate needs at least one Mutation")
    names = set()
    for spec in specs:
        if not isinstance(spec, Mutation):
            raise ValueError(f"specs must be Mutation objects, got {spec!r}")
        if spec.name in names:
            raise ValueError(f"Mutation {spec.name!r} is given twice")
        names.add(spec.name)
        if spec.name not in values:
            raise ValueError(f"values has no entry for {spec.name!r}")
        _check_value(spec, values[spec.name])
    new = dict(values)
    changed = False
    for spec in specs:
        if rng.random() < mutation_rate:
            value = _MUTATORS[spec.kind](spec, new[spec.name], rng, change_min, change_max)
            if value is not None:
                new[spec.name] = value
                changed = True
    if not changed:
        candidates = list(specs)
        while candidates:
            spec = candidates.pop(rng.randrange(len(candidates)))
            value = _MUTATORS[spec.kind](spec, new[spec.name], rng, change_min, change_max)
            if value is not None:
                new[spec.name] = value
                break
        else:
            raise ValueError("none of the values can change: " + ", ".join(s.name for s in specs))
    return new
