r"""Draw learning curves: ``python -m alf.bin.plot --root_dirs DIR... --output curves.png``.

Each ``DIR`` is a training run's root_dir or a directory of runs (a grid search's or
a PBT workspace's root). The runs are grouped into curves (runs whose directory names
differ only by a trailing seed number by default; ``--group REGEX`` groups by the
pattern's first group, or whole match, in each run's path), and each curve is drawn as
the mean over its runs with a band of ± one standard deviation (``alf.utils.curves``).

* ``--tag`` (default ``Metrics/AverageReturn``): the scalar, from ``eval/`` when the run
  has it there, else ``train/`` (``--source eval`` or ``train`` to choose);
* ``--x env_steps`` (default), ``iteration`` or ``wall_time``;
* ``--output``: the image (``.png``, ``.pdf`` or ``.svg``); ``--title``, ``--num_points``
  (interpolation points when the runs' x values differ).

A line per curve gives its runs and final mean ± std. Needs matplotlib
(``pip install 'alf[plot]'``). Bad input is one error line and exit status 2.
"""

from __future__ import annotations

import argparse
import os
import sys

from alf.bin import SetupError, report_error

PROGRAM = "alf.bin.plot"
IMAGE_FORMATS = (".png", ".pdf", ".svg")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not usage + error
        print(f"{PROGRAM}: error: {message}", file=sys.stderr)
        sys.exit(2)


def _parser() -> argparse.ArgumentParser:
    from alf.utils.curves import SOURCES, X_AXES

    parser = _Parser(prog=PROGRAM, description="Draw learning curves of training runs.")
    parser.add_argument("--root_dirs", nargs="+", required=True, metavar="DIR")
    parser.add_argument("--output", required=True, help="image file (.png, .pdf, .svg)")
    parser.add_argument("--tag", default="Metrics/AverageReturn")
    parser.add_argument("--x", default="env_steps", choices=X_AXES)
    parser.add_argument("--source", default="auto", choices=SOURCES)
    parser.add_argument("--group", default=None, help="regex grouping runs into curves")
    parser.add_argument("--title", default=None)
    parser.add_argument("--num_points", type=int, default=200)
    parser.add_argument("--verbose", action="store_true")
    return parser


def _check_output(output: str) -> str:
    output = os.path.abspath(os.path.expanduser(output))
    if os.path.splitext(output)[1].lower() not in IMAGE_FORMATS:
        raise SetupError(f"--output must end with one of {', '.join(IMAGE_FORMATS)}: {output}")
    if not os.path.isdir(os.path.dirname(output)):
        raise SetupError(f"the directory of --output does not exist: {os.path.dirname(output)}")
    return output


def _matplotlib():
    try:
        import matplotlib
    except ImportError as e:
        raise SetupError("plotting needs matplotlib: pip install 'alf[plot]'") from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


X_LABELS = {"env_steps": "environment steps", "iteration": "iteration", "wall_time": "seconds"}


def draw(curves, output: str, tag: str, x: str, title: str | None = None) -> None:
    """Draw ``curves`` (``alf.utils.curves.Aggregate``) into the image file ``output``."""
    plt = _matplotlib()
    figure, axes = plt.subplots(figsize=(7, 4.5), dpi=100)
    try:
        for curve in curves:
            label = f"{curve.label} ({len(curve.runs)} run{'s' if len(curve.runs) > 1 else ''})"
            (line,) = axes.plot(curve.x, curve.mean, label=label, linewidth=1.5)
            if len(curve.runs) > 1:
                axes.fill_between(
                    curve.x,
                    curve.mean - curve.std,
                    curve.mean + curve.std,
                    color=line.get_color(),
                    alpha=0.2,
                    linewidth=0,
                )
        axes.set_xlabel(X_LABELS[x])
        axes.set_ylabel(tag)
        axes.set_title(title or f"{tag} (mean ± std over runs)")
        axes.grid(alpha=0.3)
        axes.legend(loc="best", fontsize="small")
        figure.tight_layout()
        tmp = os.path.join(
            os.path.dirname(output), f".tmp-plot-{os.getpid()}-" + os.path.basename(output)
        )
        try:
            figure.savefig(tmp)
            os.replace(tmp, output)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    finally:
        plt.close(figure)


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    from alf.utils.curves import CurveError, learning_curves

    try:
        output = _check_output(args.output)
        if args.num_points < 2:
            raise SetupError(f"--num_points must be >= 2, got {args.num_points}")
        _matplotlib()
        curves = learning_curves(
            args.root_dirs, args.tag, args.x, args.source, args.group, args.num_points
        )
        draw(curves, output, args.tag, args.x, args.title)
    except (SetupError, CurveError) as e:
        report_error(PROGRAM, e, args.verbose)
        return 2
    for curve in curves:
        print(
            f"{curve.label}: {len(curve.runs)} run(s), {len(curve.x)} points, final "
            f"{args.tag} {curve.mean[-1]:.4g} ± {curve.std[-1]:.3g} at {args.x} {curve.x[-1]:.6g}"
        )
    print(f"Wrote {output}")
    return 0


def run() -> None:
    """Console entry point."""
    sys.exit(main())


if __name__ == "__main__":
    run()
