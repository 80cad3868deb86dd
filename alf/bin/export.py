r"""Export a trained policy: ``python -m alf.bin.export --root_dir DIR --output policy.onnx``.

The run is rebuilt as ``alf.bin.play`` rebuilds it (the recorded conf and
``--conf_param`` values, the newest readable checkpoint; ``--checkpoint_step N``,
``--best`` or ``--checkpoint FILE`` choose another), and its deterministic policy
(``predict_step``, with the observation normalizer, image scaling and frame stacking folded
in) is written as one file (``alf.export.policy_export``; docs/ecosystem.md):

* ``--format onnx`` (``.onnx``; needs ``pip install 'alf[onnx]'``): run it with
  onnxruntime or any ONNX runtime;
* ``--format torchscript`` (``.pt``, ``.ts``): ``torch.jit.load(path)(obs)``;
* ``--format torch_export`` (``.pt2``): ``torch.export.load(path).module()(obs)``.

A stateless policy maps a batch of raw observations to actions, ``(observation leaves...)
-> (action leaves...)``. A policy with a state (a recurrent network, ``FrameStacker``, a
network reading the previous action) takes it as inputs and returns the next one,
``(observation leaves..., step_type [B], state.<path>...) -> (action leaves...,
new_state.<path>...)``, and resets it itself where ``step_type`` is FIRST
(``alf.export.stateful``). ``alf.export.runtime.ExportedPolicy.load(path)`` runs any of
the files (``step``, ``initial_state``, ``run_episodes``), reading the metadata embedded in
the file (the names, dtypes and shapes of the inputs and outputs).

The format defaults to the one of ``--output``'s extension. The file is written aside and
renamed once it has been checked: it is loaded back and run on ``--verify N`` random
observations (default 1000, in random episodes for a stateful policy; 0 skips the check),
whose actions must match the checkpoint's policy (to 1e-4; discrete actions exactly), then
plays ``--verify_episodes N`` whole episodes (default 1; 0 skips it) of the run's
environment in lock step with ``predict_step`` stepped by alf's ``Unroller`` (as
``alf.bin.play`` plays; ``alf.export.parity``): the actions must match as above and the
returns of the exported policy's own episodes must be play's (to 1e-3). A policy that cannot be
exported (an unknown data transformer, a random ``predict_step``) and any other bad input
are one error line and exit status 2; a mismatch is one line and status 1.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

from absl import app, flags

from alf.bin import (
    SetupError,
    deferred_logs,
    flags_parser,
    one_line,
    refuse_stray_arguments,
    report_error,
)

FLAGS = flags.FLAGS

TOLERANCE = 1e-4


def _define_flags() -> None:
    """Define the flags (only when run as a program, so importing this module is inert)."""
    flags.DEFINE_string("root_dir", None, "Root directory of a training run.")
    flags.DEFINE_string("output", None, "The file to write (.onnx, .pt, .ts or .pt2).")
    flags.DEFINE_string("format", None, "onnx, torchscript or torch_export (default: --output's).")
    flags.DEFINE_integer("checkpoint_step", None, "Export ckpt-<step>.pt (default: newest).")
    flags.DEFINE_bool("best", False, "Export ckpt-best.pt (the best evaluation).")
    flags.DEFINE_string("checkpoint", None, "Export this checkpoint file of the run.")
    flags.DEFINE_integer("verify", 1000, "Check the file on this many random observations.")
    flags.DEFINE_integer(
        "verify_episodes", 1, "Check the file on this many episodes against predict_step."
    )
    flags.DEFINE_multi_string("conf_param", [], "'Name.arg=value' overrides.")
    flags.DEFINE_multi_string("gin_param", [], "Gin binding overrides.")
    flags.DEFINE_bool("verbose", False, "On an error, print its traceback above the error line.")


def _check_flags() -> tuple[str, str, str]:
    """Validate the flags; return ``(root_dir, output, format)``."""
    from alf.export.export_formats import ExportError, format_of

    _check_checkpoint_flags()
    if FLAGS.best and FLAGS.checkpoint_step is not None:
        raise SetupError("give at most one of --best and --checkpoint_step")
    for name in ("verify", "verify_episodes"):
        if getattr(FLAGS, name) < 0:
            raise SetupError(f"--{name} must be >= 0, got {getattr(FLAGS, name)}")
    if not FLAGS.root_dir:
        raise SetupError("--root_dir is required")
    root_dir = os.path.abspath(os.path.expanduser(FLAGS.root_dir))
    if not os.path.isdir(root_dir):
        raise SetupError(f"root_dir {root_dir} does not exist")
    if not os.path.isfile(os.path.join(root_dir, "config_files", "run.json")):
        raise SetupError(f"{root_dir} holds no training run (no config_files/run.json)")
    if not FLAGS.output:
        raise SetupError("--output is required")
    output = os.path.abspath(os.path.expanduser(FLAGS.output))
    if not os.path.isdir(os.path.dirname(output)):
        raise SetupError(f"the directory of --output does not exist: {os.path.dirname(output)}")
    try:
        fmt = format_of(output, FLAGS.format)
    except ExportError as e:
        raise SetupError(str(e)) from e
    if fmt == "onnx":
        _check_onnx_installed()
    return root_dir, output, fmt


def _check_checkpoint_flags() -> None:
    """Validate ``--checkpoint`` (and take ``--root_dir`` from it when not given)."""
    from alf.bin.play import run_dir_of

    if FLAGS.checkpoint is not None:
        if not os.path.isfile(FLAGS.checkpoint):
            raise SetupError(f"--checkpoint {FLAGS.checkpoint} is not a file")
        if FLAGS.best or FLAGS.checkpoint_step is not None:
            raise SetupError("give --checkpoint alone, not with --best or --checkpoint_step")
        if not FLAGS.root_dir:
            FLAGS.root_dir = run_dir_of(FLAGS.checkpoint)
            if FLAGS.root_dir is None:
                raise SetupError(
                    f"no training run (config_files/run.json) above {FLAGS.checkpoint}"
                )


def _check_onnx_installed() -> None:
    for module in ("onnx", "onnxscript"):
        try:
            __import__(module)
        except ImportError as e:
            raise SetupError(
                f"--format onnx needs {module}: pip install 'alf[onnx]' (or export with "
                "--format torchscript or torch_export)"
            ) from e


def _build_policy(root_dir: str):
    """The checkpoint's ``ExportablePolicy``, the checkpoint's iteration and the run's
    environment (the caller closes it)."""
    from alf.bin.play import build_experiment, load_checkpoint
    from alf.export.policy_export import ExportablePolicy, ExportError

    checkpoint = None if FLAGS.checkpoint is None else os.path.abspath(FLAGS.checkpoint)
    state = load_checkpoint(root_dir, FLAGS.checkpoint_step, FLAGS.best, checkpoint)
    try:
        env, algorithm = build_experiment(root_dir, FLAGS.conf_param, FLAGS.gin_param)
    except (ValueError, TypeError, FileNotFoundError, KeyError, ImportError) as e:
        raise SetupError(one_line(e)) from e
    try:
        algorithm.load_state_dict(state["algorithm"])
        policy = ExportablePolicy(algorithm, env.observation_spec())
    except (RuntimeError, KeyError, ValueError) as e:
        env.close()
        if isinstance(e, ExportError):
            raise SetupError(str(e)) from e
        raise SetupError(f"the checkpoint does not fit the algorithm: {one_line(e)}") from e
    except BaseException:
        env.close()
        raise
    return policy, state.get("iteration"), env


def _describe(names, specs) -> str:
    return ", ".join(
        f"{n} {str(s.dtype).replace('torch.', '')}[B{''.join(f', {d}' for d in s.shape)}]"
        for n, s in zip(names, specs)
    )


def _write(policy, output: str, fmt: str, env):
    """Export to a file beside ``output``, check it, move it in place; return the largest
    action difference on random observations and the ``EpisodeParity`` (None: not
    checked)."""
    from alf.export.policy_export import LoadedPolicy, compare, export, sample_observations

    # torch's archive writers name the archive after the file: keep output's name
    tmp_dir = tempfile.mkdtemp(dir=os.path.dirname(output), prefix=".tmp-export-")
    tmp = os.path.join(tmp_dir, os.path.basename(output))
    try:
        export(policy, tmp, fmt)
        diff = parity = None
        if FLAGS.verify > 0 and _can_run(fmt):
            observations = sample_observations(policy.observation_specs, FLAGS.verify, seed=1)
            diff = compare(policy, LoadedPolicy(tmp, fmt), observations)
            if not diff <= TOLERANCE:
                raise _Mismatch(
                    f"the exported policy's actions differ from the checkpoint's by {diff:.3g} "
                    f"(> {TOLERANCE}) on {FLAGS.verify} random observations; {output} not written"
                )
        if FLAGS.verify_episodes > 0 and _can_run(fmt):
            parity = _check_episodes(policy, LoadedPolicy(tmp, fmt), env, output)
        os.chmod(tmp, 0o644)
        os.replace(tmp, output)
        return diff, parity
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)


def _check_episodes(policy, loaded, env, output: str):
    """``alf.export.parity.episode_parity`` on ``--verify_episodes`` episodes; a
    ``_Mismatch`` unless the actions match (to ``TOLERANCE``) and so do the returns."""
    import numpy as np

    from alf.export.parity import episode_parity

    parity = episode_parity(policy.algorithm, loaded, env, FLAGS.verify_episodes)
    diff = parity.max_action_difference
    episodes = f"{parity.episodes} episode{'s' * (parity.episodes != 1)}"
    where = f"on {episodes} ({parity.steps} steps); {output} not written"
    if not diff <= TOLERANCE:
        raise _Mismatch(
            f"the exported policy's actions differ from predict_step's by {diff:.3g} "
            f"(> {TOLERANCE}) {where}"
        )
    expected = np.array([r for r, _ in parity.reference_returns], dtype=np.float64)
    got = np.array([r for r, _ in parity.exported_returns], dtype=np.float64)
    if expected.shape != got.shape or not np.allclose(got, expected, rtol=1e-3, atol=1e-3):
        raise _Mismatch(
            f"the exported policy's returns {got.tolist()} differ from predict_step's "
            f"{expected.tolist()} {where}"
        )
    return parity


class _Mismatch(Exception):
    pass


def _can_run(fmt: str) -> bool:
    if fmt != "onnx":
        return True
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        print("alf.bin.export: onnxruntime is not installed: the ONNX file is not checked")
        return False
    return True


def main(argv) -> int:
    """Export (see the module doc); return the exit status."""
    if refuse_stray_arguments("alf.bin.export", argv):
        return 2
    from alf.export.export_formats import ExportError

    env = None
    try:
        root_dir, output, fmt = _check_flags()
        with deferred_logs():
            policy, iteration, env = _build_policy(root_dir)
        diff, parity = _write(policy, output, fmt, env)
    except (SetupError, ExportError) as e:
        report_error("alf.bin.export", e, FLAGS.verbose)
        return 2
    except _Mismatch as e:
        report_error("alf.bin.export", e, FLAGS.verbose)
        return 1
    finally:
        if env is not None:
            env.close()
    _report(policy, iteration, root_dir, output, fmt, diff, parity)
    return 0


def _report(policy, iteration, root_dir, output, fmt, diff, parity) -> None:
    print(f"Exported {policy.algorithm.name} (iteration {iteration} of {root_dir}) to {output}")
    print(f"  format {fmt}; inputs: {_describe(policy.input_names, policy.input_specs)}")
    print(f"  outputs: {_describe(policy.output_names, policy.output_specs)}")
    if policy.stateful:
        print("  stateful: feed new_state.* back as state.*; reset inside where step_type is FIRST")
    if diff is not None:
        print(
            f"  checked on {FLAGS.verify} random observations: max |action difference| {diff:.3g}"
        )
    if parity is not None:
        returns = ", ".join(
            f"{r:.3f}" if isinstance(r, float) else str(r) for r, _ in parity.exported_returns
        )
        print(
            f"  checked on {parity.episodes} episode{'s' * (parity.episodes != 1)} "
            f"({parity.steps} steps) against "
            f"predict_step: max |action difference| {parity.max_action_difference:.3g}; "
            f"returns {returns}"
        )


def run() -> None:
    """Console entry point."""
    _define_flags()
    app.run(lambda argv: sys.exit(main(argv)), flags_parser=flags_parser("alf.bin.export"))


if __name__ == "__main__":
    run()
