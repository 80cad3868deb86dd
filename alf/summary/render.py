"""Per-step images of an algorithm's quantities, shown next to the env in ``alf.bin.play``.

An algorithm renders what it wants to watch in its ``predict_step`` and puts the
returned ``Image`` objects anywhere in ``AlgStep.info``::

    import alf.summary.render as render

    with alf.summary.scope("MyAlg"):
        action_img = render.render_action(
            name="action", action=action, action_spec=self._action_spec)
    return alg_step._replace(info=dict(action_img=action_img, alg=alg_step.info))

``alf.bin.play --record_file x.gif`` turns rendering on (``enable_rendering``) and draws
the images of every step beside the env frame. Rendering is off otherwise (training,
evaluation): every ``render_*`` then returns None at once, without touching its data,
so ``info`` holds None there.

Rendering uses matplotlib (the ``plot`` extra: ``pip install 'alf[plot]'``), imported
only when something is rendered. An image is ``figsize * dpi`` pixels, or
``img_height`` x ``img_width`` when given (one of them: the other keeps the aspect).
"""

from __future__ import annotations

import functools

import numpy as np
import torch

import alf.nest as nest
from alf.summary.summary_ops import scope_name
from alf.tensor_specs import BoundedTensorSpec

__all__ = [
    "Image",
    "enable_rendering",
    "is_rendering_enabled",
    "render_action",
    "render_action_distribution",
    "render_bar",
    "render_curve",
    "render_heatmap",
    "render_text",
    "rendering",
]

_state = {"enabled": False}


def enable_rendering(flag: bool = True) -> None:
    """Turn rendering on (``flag`` True) or off for the whole process."""
    _state["enabled"] = bool(flag)


def is_rendering_enabled() -> bool:
    """Whether ``render_*`` draw images now (otherwise they return None)."""
    return _state["enabled"]


class rendering:  # noqa: N801 - used as a context manager, like ``record_if``
    """``with rendering(flag):`` rendering on (or off) inside the block only."""

    def __init__(self, flag: bool = True):
        self._flag = bool(flag)

    def __enter__(self):
        self._previous = _state["enabled"]
        _state["enabled"] = self._flag

    def __exit__(self, *exc):
        _state["enabled"] = self._previous


class Image:
    """An RGB image: a ``[H, W, 3]`` uint8 numpy array (``[H, W]`` gray is made RGB).

    Args:
        img: the pixels.
    """

    def __init__(self, img):
        if not isinstance(img, np.ndarray):
            raise TypeError(f"Image needs a numpy array, got {type(img).__name__}")
        if img.ndim == 2:
            img = np.repeat(img[:, :, None], 3, axis=2)
        if img.ndim != 3 or img.shape[2] != 3 or img.shape[0] < 1 or img.shape[1] < 1:
            raise ValueError(f"Image needs a [H, W] or [H, W, 3] array, got shape {img.shape}")
        if img.dtype != np.uint8:
            raise ValueError(f"Image needs uint8 pixels, got {img.dtype}")
        self._img = img

    @property
    def shape(self) -> tuple:
        return self._img.shape

    @property
    def data(self) -> np.ndarray:
        """The ``[H, W, 3]`` uint8 pixels."""
        return self._img

    def resize(self, height: int | None = None, width: int | None = None) -> Image:
        """Scale to ``height`` x ``width`` in place (nearest pixel); with one of them
        given, the other keeps the aspect ratio. Returns self."""
        h, w = self._img.shape[:2]
        if height is None and width is None:
            raise ValueError("Image.resize needs height or width")
        if height is None:
            height = max(1, round(h * width / w))
        if width is None:
            width = max(1, round(w * height / h))
        if height < 1 or width < 1:
            raise ValueError(f"Image.resize needs a positive size, got {height}x{width}")
        rows = (np.arange(height) * h // height).astype(np.int64)
        cols = (np.arange(width) * w // width).astype(np.int64)
        self._img = np.ascontiguousarray(self._img[rows][:, cols])
        return self

    @classmethod
    def from_pyplot_fig(cls, fig, dpi: int = 200) -> Image:
        """The pixels of the matplotlib figure ``fig`` drawn at ``dpi`` (its ``figsize
        * dpi``, not cropped)."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        fig.set_dpi(dpi)
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        return cls(np.array(canvas.buffer_rgba())[:, :, :3])

    @classmethod
    def stack_images(cls, imgs, horizontal: bool = True) -> Image:
        """The images of the list ``imgs`` side by side (``horizontal``) or one above the
        other, top/left aligned on a white background."""
        if not isinstance(imgs, (list, tuple)) or not imgs:
            raise ValueError("Image.stack_images needs a non-empty list of Image")
        axis = 1 if horizontal else 0
        size = [0, 0]
        size[axis] = sum(i.shape[axis] for i in imgs)
        size[1 - axis] = max(i.shape[1 - axis] for i in imgs)
        out = np.full((size[0], size[1], 3), 255, dtype=np.uint8)
        offset = 0
        for i in imgs:
            h, w = i.shape[:2]
            if horizontal:
                out[:h, offset : offset + w] = i.data
            else:
                out[offset : offset + h, :w] = i.data
            offset += i.shape[axis]
        return cls(out)

    @classmethod
    def pack_image_nest(cls, imgs) -> Image | None:
        """The ``Image`` leaves of the nest ``imgs`` in a grid (rows of ``ceil(sqrt(n))``
        images, in ``alf.nest.flatten`` order); None if it holds none."""
        leaves = [i for i in nest.flatten(imgs) if isinstance(i, Image)]
        if not leaves:
            return None
        per_row = int(np.ceil(np.sqrt(len(leaves))))
        rows = [
            cls.stack_images(leaves[i : i + per_row], horizontal=True)
            for i in range(0, len(leaves), per_row)
        ]
        return cls.stack_images(rows, horizontal=False)


# -- drawing -------------------------------------------------------------------------


def _figure(figsize):
    """A matplotlib ``Figure`` (not pyplot's: no global state, no display)."""
    try:
        from matplotlib.figure import Figure
    except ImportError as e:
        raise ImportError("alf.summary.render needs matplotlib: pip install 'alf[plot]'") from e
    return Figure(figsize=figsize)


def _rendering_function(draw):
    """``draw(name, data, **kwargs)`` called only while rendering is enabled, with
    ``name`` prefixed by the open ``alf.summary.scope`` blocks."""

    @functools.wraps(draw)
    def wrapper(name, data, **kwargs):
        if not _state["enabled"]:
            return None
        return draw(scope_name() + name, data, **kwargs)

    return wrapper


def _to_image(name, fig, dpi, img_height, img_width) -> Image:
    fig.suptitle(name, fontsize=8)
    fig.tight_layout()
    img = Image.from_pyplot_fig(fig, dpi=dpi)
    if img_height is not None or img_width is not None:
        img.resize(height=img_height, width=img_width)
    return img


def _as_array(name, data, ranks) -> np.ndarray:
    if isinstance(data, torch.Tensor):
        data = data.detach().float().cpu().numpy()
    array = np.asarray(data, dtype=np.float64)
    if array.ndim not in ranks:
        raise ValueError(f"rendering {name!r} needs data of rank {ranks}, got shape {array.shape}")
    return array


@_rendering_function
def render_bar(
    name: str,
    data,
    width: float = 0.8,
    y_range=None,
    x_ticks=None,
    x_label=None,
    y_label=None,
    legends=None,
    legend_kwargs=None,
    annotate_format: str = "%.2f",
    img_height=None,
    img_width=None,
    dpi: int = 300,
    figsize=(2, 2),
    **kwargs,
) -> Image | None:
    """Bars of the heights ``data`` (rank 1; rank 2: a row per series, drawn over each
    other), each labelled with ``annotate_format`` (``''``: none); ``**kwargs`` go to
    ``Axes.bar``."""
    array = _as_array(name, data, (1, 2)).reshape(-1, np.shape(data)[-1])
    fig = _figure(figsize)
    ax = fig.add_subplot()
    x = np.arange(array.shape[1])
    for i, row in enumerate(array):
        label = legends[i] if legends else None
        bars = ax.bar(x, row, width, label=label, **kwargs)
        if annotate_format:
            ax.bar_label(bars, label_type="center", fmt=annotate_format)
    ax.axhline(0, color="grey", linewidth=1)
    if legends:
        ax.legend(loc="best", **(legend_kwargs or {}))
    _decorate(ax, x_ticks, y_range, x_label, y_label)
    return _to_image(name, fig, dpi, img_height, img_width)


def _decorate(ax, x_ticks, y_range, x_label, y_label) -> None:
    if x_ticks is not None:
        ax.set_xticks(list(x_ticks))
    if y_range:
        ax.set_ylim(y_range)
    if x_label:
        ax.set_xlabel(x_label)
    if y_label:
        ax.set_ylabel(y_label)


@_rendering_function
def render_curve(
    name: str,
    data,
    x_range=None,
    y_range=None,
    x_label=None,
    y_label=None,
    legends=None,
    legend_kwargs=None,
    img_height=None,
    img_width=None,
    dpi: int = 300,
    figsize=(2, 2),
    **kwargs,
) -> Image | None:
    """Curves of ``data`` (rank 1; rank 2: a curve per row) over the point index, or over
    ``x_range = (min_x, max_x)`` evenly; ``**kwargs`` go to ``Axes.plot``."""
    array = _as_array(name, data, (1, 2))
    array = array.reshape(-1, array.shape[-1])
    fig = _figure(figsize)
    ax = fig.add_subplot()
    n = array.shape[1]
    x = np.arange(n, dtype=np.float64)
    if x_range is not None:
        x = np.linspace(x_range[0], x_range[1], n) if n > 1 else np.array([x_range[0]])
    for row in array:
        ax.plot(x, row, **kwargs)
    if legends is not None:
        ax.legend(legends, loc="best", **(legend_kwargs or {}))
    _decorate(ax, None, y_range, x_label, y_label)
    return _to_image(name, fig, dpi, img_height, img_width)


@_rendering_function
def render_heatmap(
    name: str,
    data,
    val_label: str = "",
    row_labels=None,
    col_labels=None,
    annotate_format: str = "%.2f",
    font_size: int = 7,
    img_height=None,
    img_width=None,
    dpi: int = 300,
    figsize=(2, 2),
    **kwargs,
) -> Image | None:
    """A ``[H, W]`` ``data`` as a heatmap with a colorbar labelled ``val_label``, each
    cell annotated with ``annotate_format`` (``''``: none); ``**kwargs`` (e.g. ``vmin``,
    ``vmax``) go to ``Axes.imshow``."""
    array = _as_array(name, data, (2,))
    for what, labels, n in (
        ("row_labels", row_labels, array.shape[0]),
        ("col_labels", col_labels, array.shape[1]),
    ):
        if labels is not None and len(labels) != n:
            raise ValueError(f"render_heatmap {name!r}: {what} has {len(labels)} labels for {n}")
    fig = _figure(figsize)
    ax = fig.add_subplot()
    im = ax.imshow(array, **kwargs)
    fig.colorbar(im, ax=ax).ax.set_ylabel(val_label, rotation=-90, va="bottom")
    if row_labels is not None:
        ax.set_yticks(np.arange(array.shape[0]), labels=list(row_labels))
    if col_labels is not None:
        ax.set_xticks(np.arange(array.shape[1]), labels=list(col_labels))
    if annotate_format:
        threshold = im.norm(array.max()) / 2.0
        for (i, j), value in np.ndenumerate(array):
            color = "white" if im.norm(value) > threshold else "black"
            ax.text(
                j, i, annotate_format % value, ha="center", va="center", color=color, size=font_size
            )
    return _to_image(name, fig, dpi, img_height, img_width)


@_rendering_function
def render_text(
    name: str,
    data: str,
    font_size: int = 10,
    fig_width_per_char: float = 0.1,
    fig_height: float = 0.4,
    img_height=None,
    img_width=None,
    dpi: int = 200,
    **kwargs,
) -> Image | None:
    """The string ``data`` on one line; ``**kwargs`` go to ``Axes.text``."""
    if not isinstance(data, str):
        raise TypeError(f"render_text {name!r} needs a string, got {type(data).__name__}")
    fig = _figure((max(len(data), len(name), 1) * fig_width_per_char, fig_height))
    ax = fig.add_subplot()
    ax.text(0, 0, data, fontsize=font_size, **kwargs)
    ax.axis("off")
    fig.suptitle(name, fontsize=6)
    img = Image.from_pyplot_fig(fig, dpi=dpi)
    if img_height is not None or img_width is not None:
        img.resize(height=img_height, width=img_width)
    return img


# -- actions -------------------------------------------------------------------------


def _leaf_name(name: str, path: str) -> str:
    return name if path == "" else f"{name}/{path}"


def render_action(name: str, action, action_spec, **kwargs):
    """Bars of the action of one step (batch size 1): a nest like ``action_spec``, one
    ``Image`` per action (None while rendering is off); ``**kwargs`` go to
    ``render_bar``. Bounded actions are drawn on their bounds."""
    if not _state["enabled"]:
        return nest.map_structure(lambda _: None, action_spec)

    def one(path, act, spec):
        y_range = None
        if isinstance(spec, BoundedTensorSpec):
            bound = (float(np.min(spec.minimum)), float(np.max(spec.maximum)))
            if all(np.isfinite(bound)):
                y_range = bound
        fmt = "%d" if spec.is_discrete else "%.2f"
        act = torch.as_tensor(act).reshape(-1) if spec.is_discrete else torch.as_tensor(act)
        return render_bar(
            _leaf_name(name, path),
            act,
            y_range=y_range,
            annotate_format=fmt,
            x_ticks=range(act.shape[-1]),
            **kwargs,
        )

    return nest.map_structure_with_path(one, action, action_spec)


def render_action_distribution(
    name: str, act_dist, action_spec, n_samples: int = 500, n_bins: int = 20, **kwargs
):
    """Curves of the action distribution of one step (batch size 1), a nest like
    ``action_spec``: a ``Categorical``'s probabilities, or for a continuous action a
    density histogram per dimension from ``n_samples`` samples in ``n_bins`` bins over
    its bounds; ``**kwargs`` go to ``render_curve``. None while rendering is off."""
    if not _state["enabled"]:
        return nest.map_structure(lambda _: None, action_spec)
    dists = nest.flatten_up_to(action_spec, act_dist)
    paths = [p for p, _ in nest.flatten_with_path(action_spec)]
    images = []
    for path, dist, spec in zip(paths, dists, nest.flatten(action_spec)):
        leaf = _leaf_name(name, path)
        if spec.is_discrete:
            if not isinstance(dist, torch.distributions.Categorical):
                raise TypeError(
                    f"render_action_distribution {leaf!r}: a discrete action needs a "
                    f"Categorical, got {type(dist).__name__}"
                )
            probs, x_range, legends = dist.probs.reshape(-1).detach().cpu(), None, None
        else:
            x_range = (float(np.min(spec.minimum)), float(np.max(spec.maximum)))
            points = dist.sample((n_samples,)).detach().float().cpu().numpy().reshape(n_samples, -1)
            probs = np.stack(
                [
                    np.histogram(points[:, d], bins=n_bins, range=x_range, density=True)[0]
                    for d in range(points.shape[1])
                ]
            )
            legends = [f"d{d}" for d in range(points.shape[1])]
        images.append(render_curve(leaf, probs, x_range=x_range, legends=legends, **kwargs))
    return nest.pack_sequence_as(action_spec, images)
