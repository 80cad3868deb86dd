"""Counter-based random streams for acting: every environment draws its own numbers.

An actor steps its ``B`` environments as one batch, so a draw such as
``torch.rand(B, n)`` from one generator gives env ``i`` numbers that depend on ``B``,
on the envs beside it and on every draw before it. Split the same envs over two
samplers, or over two learner ranks, and each env gets other numbers: where a run
executes changes what it learns. Here a policy step's draws are instead a pure function
of a key and a counter (as in Salmon et al. 2011, "Parallel random numbers: as easy as
1, 2, 3"):

    bits(env g, step c, draw k, element j) = mix(key_g + (c * 2**32 + k * 2**24 + j + 1) * γ)
    key_g = mix(key(seed, domain) + (g + 1) * γ)

that is SplitMix64 (Steele, Lea and Flood 2014) seeded with ``key_g`` and read at position
``c * 2**32 + k * 2**24 + j``, where ``g`` is the env's index in the whole run
(``first_env_id + i``), ``c`` the number of policy steps the env has taken since the
stream (re)started, ``k < 256`` the draw's rank among the draws of that policy step,
``j < 2**24`` the element's index within the env's row of the draw, ``mix`` SplitMix64's
finalizer and ``γ`` the golden ratio's 64-bit odd constant. So env ``g``'s numbers are
the same whether it is stepped alone, beside 7 others in one process, in sampler 1 of 2,
or on learner rank 1 of 2.

**How draws reach the streams.** While an actor takes a policy step inside
``ActingStreams.drawing``, torch's sampling functions (``torch.rand``, ``randn``,
``rand_like``, ``randn_like``, ``randint``, ``multinomial``, ``normal``, ``bernoulli``
and the in-place ``Tensor.uniform_``, ``normal_``, ``exponential_``, ``bernoulli_``)
draw from the stream of the thread that entered it; everywhere else (another thread, the
learner's minibatch shuffles, a call given an explicit ``generator``) they are torch's
own. Any policy written with torch's functions and distributions is therefore covered
without change. A draw shaped ``[B, ...]`` gives row ``i`` env ``i``'s numbers; a draw
of another shape is keyed by the step alone (the same in every layout as long as it does
not depend on ``B``). Draws through other functions (``torch._standard_gamma``, which
Beta and Dirichlet sampling use, ``torch.randperm``, dropout) still come from torch's
global generator and are not layout-invariant.

Uniform floats: float32 from the top 24 bits, float64 from the top 53 (``[0, 1)``, as
torch's); normal draws are ``ndtri`` of a uniform on ``(0, 1)`` computed in float64.
"""

from __future__ import annotations

import functools
import threading
import warnings

import numpy as np
import torch

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)
_S11, _S32, _S40 = np.uint64(11), np.uint64(32), np.uint64(40)
_ONE = np.uint64(1)
_F32_TWO_M24 = np.float32(2.0**-24)
_TWO_M53 = 2.0**-53

#: the stream domains: training unrolls, prenormalization, evaluation, minibatch shuffles
DOMAINS = {"rollout": 1, "prenormalize": 2, "evaluate": 3, "shuffle": 4}


def mix64(z: np.ndarray) -> np.ndarray:
    """The SplitMix64 finalizer of a uint64 array ``z``, in place (a bijection of 64-bit
    words; array arithmetic wraps silently). Returns ``z``."""
    z ^= z >> _S30
    z *= _M1
    z ^= z >> _S27
    z *= _M2
    z ^= z >> _S31
    return z


def _counter(value) -> np.ndarray:
    """``(value + 1) * γ`` as a uint64 array (wrapping)."""
    return (np.asarray(value, dtype=np.uint64).reshape(-1) + _ONE) * _GAMMA


def base_key(seed: int, domain: int) -> np.ndarray:
    """The key (a 1-element uint64 array) of a stream seeded with ``seed`` in ``domain``."""
    words = mix64(np.array([int(seed) % 2**64, int(domain) % 2**64], dtype=np.uint64))
    return mix64(words[:1] ^ mix64(words[1:] + _GAMMA))


#: the most draws of one policy step and the most numbers per env row of one draw
MAX_DRAWS = 1 << 8
MAX_ROW_SIZE = 1 << 24


@functools.lru_cache(maxsize=256)
def _offsets(draw: int, size: int) -> np.ndarray:
    """``(draw * 2**24 + j + 1) * γ`` for ``j < size``: draw ``draw``'s element counters."""
    if draw >= MAX_DRAWS:
        raise RuntimeError(
            f"a policy step drew random numbers more than {MAX_DRAWS} times "
            "(alf.utils.random_streams)"
        )
    if size > MAX_ROW_SIZE:
        raise RuntimeError(
            f"a policy step drew {size} random numbers per env in one draw, more than "
            f"{MAX_ROW_SIZE} (alf.utils.random_streams)"
        )
    return _counter((draw << 24) + np.arange(size, dtype=np.uint64))


class _Draws:
    """The keys of the policy step in progress in one thread and its draw count."""

    __slots__ = ("_env_keys", "_steps", "_base", "_row_keys", "batch", "count")

    def __init__(self, env_keys: np.ndarray, steps: np.ndarray, base: np.ndarray):
        self._env_keys = env_keys
        self._steps = steps
        self._base = base
        self._row_keys = None  # [B, 1]: key_g + c * 2**32 * γ, at the first draw
        self.batch = int(env_keys.shape[0])
        self.count = 0

    def bits(self, shape: tuple) -> np.ndarray:
        """``shape`` random uint64 words of the next draw."""
        draw = self.count
        self.count += 1
        if shape and shape[0] == self.batch:
            if self._row_keys is None:
                self._row_keys = (self._env_keys + (self._steps << _S32) * _GAMMA)[:, None]
            per_row = 1
            for s in shape[1:]:
                per_row *= s
            words = self._row_keys + _offsets(draw, per_row)
        else:  # keyed by the step alone: the stream seeded with the domain's key
            size = 1
            for s in shape:
                size *= s
            words = (self._base + (self._steps[:1] << _S32) * _GAMMA) + _offsets(draw, size)
        return mix64(words).reshape(shape)


_local = threading.local()


class ActingStreams:
    """The counter-based streams of an actor's ``B`` environments (see the module doc).

    Args:
        seed: the stream seed: the run's seed, or the seed the environments restart with
            (a resumed run restarts with the same one, so it continues exactly).
        env_ids: the run-wide index ``g`` of each row (``first_env_id + i``).
        domain: which use the streams serve (``DOMAINS``): the training unrolls, the
            prenormalization and the evaluation draw different numbers.
    """

    def __init__(self, seed: int, env_ids, domain: str = "rollout"):
        self._env_ids = np.asarray(env_ids, dtype=np.uint64).reshape(-1)
        self._domain = DOMAINS[domain]
        self.restart(seed)

    @property
    def batch_size(self) -> int:
        return int(self._env_ids.shape[0])

    def restart(self, seed: int) -> None:
        """Start every env's stream again from step 0 with ``seed``."""
        self.seed = int(seed)
        self._base = base_key(seed, self._domain)
        self._env_keys = mix64(self._base + _counter(self._env_ids))
        self._steps = np.zeros(self.batch_size, dtype=np.uint64)

    def sibling(self, domain: str) -> ActingStreams:
        """The same envs' streams in another ``domain``, from step 0."""
        return ActingStreams(self.seed, self._env_ids, domain)

    @property
    def steps(self) -> np.ndarray:
        """The policy steps each env has taken since the last restart (a copy)."""
        return self._steps.copy()

    def drawing(self, rows=None, advance: bool = True) -> _Drawing:
        """A context in which torch's draws come from the streams of ``rows`` (an index
        array or tensor; None: every row, in order) at their current steps; at its exit,
        with ``advance``, those rows count one step (the bootstrap row passes False: the
        next unroll takes the same step again)."""
        return _Drawing(self, rows, advance)


class _Drawing:
    __slots__ = ("_streams", "_rows", "_advance", "_previous")

    def __init__(self, streams: ActingStreams, rows, advance: bool):
        if rows is not None:
            rows = np.asarray(rows.cpu() if torch.is_tensor(rows) else rows, dtype=np.int64)
        self._streams = streams
        self._rows = rows
        self._advance = advance

    def __enter__(self):
        s, rows = self._streams, self._rows
        if rows is None:
            draws = _Draws(s._env_keys, s._steps, s._base)
        else:
            draws = _Draws(s._env_keys[rows], s._steps[rows], s._base)
        self._previous = getattr(_local, "draws", None)
        _local.draws = draws
        return self

    def __exit__(self, *exc):
        _local.draws = self._previous
        if self._advance and exc[0] is None:
            s = self._streams
            if self._rows is None:
                s._steps = s._steps + _ONE
            else:
                s._steps[self._rows] += _ONE


# ---------------------------------------------------------------------------
# the sampling functions, drawing from the active stream


def _uniform(draws: _Draws, shape, dtype=None, device=None, open_interval=False):
    dtype = dtype or torch.get_default_dtype()
    bits = draws.bits(tuple(shape))
    if open_interval:
        u = torch.from_numpy(((bits >> _S11).astype(np.float64) + 0.5) * _TWO_M53)
    elif dtype == torch.float64:
        u = torch.from_numpy((bits >> _S11).astype(np.float64) * _TWO_M53)
    else:
        u = (bits >> _S40).astype(np.float32)
        u *= _F32_TWO_M24
        u = torch.from_numpy(u)
        if dtype != torch.float32:
            u = u.to(dtype)
    return u if device is None or str(device) == "cpu" else u.to(device)


def _standard_normal(draws: _Draws, shape, dtype=None, device=None):
    dtype = dtype or torch.get_default_dtype()
    z = torch.special.ndtri(_uniform(draws, shape, open_interval=True)).to(dtype)
    return z if device is None else z.to(device)


def _size(args, kwargs) -> tuple:
    size = kwargs.get("size", args)
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = size[0]
    return tuple(int(s) for s in size)


_ORIGINAL = {}
_warned = set()


def _fallback(name, reason, *args, **kwargs):
    if name not in _warned:
        _warned.add(name)
        warnings.warn(
            f"torch.{name} called while acting {reason}: it draws from torch's global "
            "generator, so this draw is not layout-invariant",
            stacklevel=3,
        )
    return _ORIGINAL[name](*args, **kwargs)


def _routed(name):
    """Decorate the stream version of torch function ``name``: outside a stream, or
    with an explicit generator or ``out``, torch's own runs."""

    def decorate(stream_fn):
        @functools.wraps(_ORIGINAL[name])
        def wrapper(*args, **kwargs):
            draws = getattr(_local, "draws", None)
            if draws is None or kwargs.get("generator") is not None:
                return _ORIGINAL[name](*args, **kwargs)
            if kwargs.get("out") is not None:
                return _fallback(name, "with out=", *args, **kwargs)
            return stream_fn(draws, *args, **kwargs)

        return wrapper

    return decorate


def _rand(draws, *args, dtype=None, device=None, **_):
    return _uniform(draws, _size(args, _), dtype, device)


def _randn(draws, *args, dtype=None, device=None, **_):
    return _standard_normal(draws, _size(args, _), dtype, device)


def _rand_like(draws, t, dtype=None, device=None, **_):
    return _uniform(draws, t.shape, dtype or t.dtype, device or t.device)


def _randn_like(draws, t, dtype=None, device=None, **_):
    return _standard_normal(draws, t.shape, dtype or t.dtype, device or t.device)


def _randint(draws, *args, dtype=None, device=None, **kwargs):
    # torch.randint([low,] high, size): positional, or any of them by keyword
    positional = list(args)
    size = kwargs["size"] if "size" in kwargs else positional.pop()
    if "high" in kwargs:
        low, high = kwargs.get("low", positional[0] if positional else 0), kwargs["high"]
    elif len(positional) >= 2:
        low, high = positional[:2]
    else:
        low, high = kwargs.get("low", 0), positional[0]
    u = _uniform(draws, tuple(size), torch.float64)
    values = (low + (u * (high - low)).floor_()).clamp_(max=high - 1)
    values = values.to(dtype or torch.int64)
    return values if device is None else values.to(device)


def _multinomial(draws, probs, num_samples, replacement=False, **_):
    probs = probs.to(torch.float64)
    if replacement or num_samples == 1:
        # inverse CDF per sample: the first category whose cumulative mass exceeds u
        cdf = probs.cumsum(-1)
        cdf = cdf / cdf[..., -1:]
        u = _uniform(draws, (*probs.shape[:-1], num_samples), torch.float64, probs.device)
        index = torch.searchsorted(cdf.contiguous(), u.contiguous(), right=True)
        last = probs.shape[-1] - 1 - (probs.flip(-1) > 0).to(torch.int64).argmax(-1, keepdim=True)
        return torch.minimum(index, last)
    # without replacement: the top num_samples of log p + Gumbel noise (Gumbel top-k)
    u = _uniform(draws, probs.shape, torch.float64, probs.device, open_interval=True)
    return (probs.log() - u.log().neg().log()).topk(num_samples, dim=-1).indices


def _normal(draws, mean, std=1.0, size=None, *_, **kwargs):
    if not torch.is_tensor(mean) and not torch.is_tensor(std):
        shape = tuple(size if size is not None else kwargs.get("size", ()))
        noise = _standard_normal(draws, shape, kwargs.get("dtype"), kwargs.get("device"))
        return mean + std * noise
    ref = mean if torch.is_tensor(mean) else std
    shape = torch.broadcast_shapes(
        mean.shape if torch.is_tensor(mean) else (), std.shape if torch.is_tensor(std) else ()
    )
    return mean + std * _standard_normal(draws, shape, ref.dtype, ref.device)


def _bernoulli(draws, p, *args, **_):
    probs = args[0] if args and not torch.is_tensor(p) else p
    if args and torch.is_tensor(p) and not isinstance(args[0], torch.Generator):
        probs = torch.full_like(p, float(args[0]))
    u = _uniform(draws, probs.shape, torch.float64, probs.device)
    return (u < probs).to(probs.dtype)


def _uniform_(draws, t, a=0.0, b=1.0, **_):
    u = _uniform(draws, t.shape, torch.float64 if t.dtype == torch.float64 else torch.float32)
    return t.copy_(a + (b - a) * u)


def _normal_(draws, t, mean=0.0, std=1.0, **_):
    return t.copy_(mean + std * _standard_normal(draws, t.shape, t.dtype))


def _exponential_(draws, t, lambd=1.0, **_):
    u = _uniform(draws, t.shape, torch.float64, open_interval=True)
    return t.copy_(-u.log() / lambd)


def _bernoulli_(draws, t, p=0.5, **_):
    probs = p if torch.is_tensor(p) else torch.full(t.shape, float(p), dtype=torch.float64)
    u = _uniform(draws, t.shape, torch.float64)
    return t.copy_(u < probs.to(torch.float64).cpu())


_TORCH_FUNCTIONS = {
    "rand": _rand,
    "randn": _randn,
    "rand_like": _rand_like,
    "randn_like": _randn_like,
    "randint": _randint,
    "multinomial": _multinomial,
    "normal": _normal,
    "bernoulli": _bernoulli,
}
_TENSOR_METHODS = {
    "uniform_": _uniform_,
    "normal_": _normal_,
    "exponential_": _exponential_,
    "bernoulli_": _bernoulli_,
}


def _install() -> None:
    """Route torch's sampling functions through the streams (once per process)."""
    if _ORIGINAL:
        return
    for name, fn in _TORCH_FUNCTIONS.items():
        _ORIGINAL[name] = getattr(torch, name)
        setattr(torch, name, _routed(name)(fn))
    for name, fn in _TENSOR_METHODS.items():
        _ORIGINAL[name] = getattr(torch.Tensor, name)
        setattr(torch.Tensor, name, _routed(name)(fn))


_install()
