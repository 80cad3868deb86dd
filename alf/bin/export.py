r"""Export a trained policy: ``python -m alf.bin.export --root_dir DIR --output policy.onnx``.

The run is rebuilt as ``alf.bin.play`` rebuilds it (the recorded conf and
``--conf_param`` values, the newest readable checkpoint; ``--checkpoint_step N``,
``--best`` or ``--checkpoint FILE`` choose another), and its deterministic policy
(``predict_step``, with the observation normalizer and image scaling folded in) is
written as one file that maps a batch of raw observations to actions
(``alf.export.policy_export``; docs/ecosystem.md):

* ``--format onnx`` (``.onnx``; needs ``pip install 'alf[onnx]'``): run it with
  onnxruntime or any ONNX runtime;
* ``--format torchscript`` (``.pt``, ``.ts``): ``torch.jit.load(path)(obs)``;
* ``--format torch_export`` (``.pt2``): ``torch.export.load(path).module()(obs)``.

The format defaults to the one of ``--output``'s extension. The file is written aside and
renamed once it has been checked: it is loaded back and run on ``--verify N`` random
observations (default 1000; 0 skips the check), whose actions must match the
checkpoint's policy (to 1e-4; discrete actions exactly). A policy that cannot be exported
(recurrent, with ``FrameStacker``, an unknown data transformer, a random
``predict_step``) and any other bad input are one error line and exit status 2; a
mismatch is one line and status 1.
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
    flags.DEFINE_multi_string("conf_param", [], "'Name.arg=value' overrides.")
    flags.DEFINE_multi_string("gin_param", [], "Gin binding overrides.")
    flags.DEFINE_bool("verbose", False, "On an error, print its traceback above the error line.")


def _check_flags() -> tuple[str, str, str]:
    """Validate the flags; return ``(root_dir, output, format)``."""
    from alf.bin.play import run_dir_of
    from alf.export.export_formats import ExportError, format_of

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
    if FLAGS.best and FLAGS.checkpoint_step is not None:
        raise SetupError("give at most one of --best and --checkpoint_step")
    if FLAGS.verify < 0:
        raise SetupError(f"--verify must be >= 0, got {FLAGS.verify}")
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
    """The checkpoint's ``ExportablePolicy`` and the checkpoint's iteration."""
    from alf.bin.play import build_experiment, load_checkpoint
    from alf.export.policy_export import ExportablePolicy, ExportError

    checkpoint = None if FLAGS.checkpoint is None else os.path.abspath(FLAGS.checkpoint)
    state = load_checkpoint(root_dir, FLAGS.checkpoint_step, FLAGS.best, checkpoint)
    try:
        env, algorithm = build_experiment(root_dir, FLAGS.conf_param, FLAGS.gin_param)
    except (ValueError, TypeError, FileNotFoundError, KeyError, ImportError) as e:
        raise SetupError(one_line(e)) from e
    try:
        observation_spec = env.observation_spec()
    finally:
        env.close()
    try:
        algorithm.load_state_dict(state["algorithm"])
    except (RuntimeError, KeyError, ValueError) as e:
        raise SetupError(f"the checkpoint does not fit the algorithm: {one_line(e)}") from e
    try:
        policy = ExportablePolicy(algorithm, observation_spec)
    except ExportError as e:
        raise SetupError(str(e)) from e
    return policy, state.get("iteration")


def _describe(names, specs) -> str:
    return ", ".join(
        f"{n} {str(s.dtype).replace('torch.', '')}[B{''.join(f', {d}' for d in s.shape)}]"
        for n, s in zip(names, specs)
    )


def _write(policy, output: str, fmt: str) -> float | None:
    """Export to a file beside ``output``, check it, move it in place; return the largest
    action difference found (None: not checked)."""
    from alf.export.policy_export import LoadedPolicy, compare, export, sample_observations

    # torch's archive writers name the archive after the file: keep output's name
    tmp_dir = tempfile.mkdtemp(dir=os.path.dirname(output), prefix=".tmp-export-")
    tmp = os.path.join(tmp_dir, os.path.basename(output))
    try:
        export(policy, tmp, fmt)
        diff = None
        if FLAGS.verify > 0 and _can_run(fmt):
            observations = sample_observations(policy.input_specs, FLAGS.verify, seed=1)
            diff = compare(policy, LoadedPolicy(tmp, fmt), observations)
            if not diff <= TOLERANCE:
                raise _Mismatch(
                    f"the exported policy's actions differ from the checkpoint's by {diff:.3g} "
                    f"(> {TOLERANCE}) on {FLAGS.verify} random observations; {output} not written"
                )
        os.chmod(tmp, 0o644)
        os.replace(tmp, output)
        return diff
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)


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

    try:
        root_dir, output, fmt = _check_flags()
        with deferred_logs():
            policy, iteration = _build_policy(root_dir)
        diff = _write(policy, output, fmt)
    except (SetupError, ExportError) as e:
        report_error("alf.bin.export", e, FLAGS.verbose)
        return 2
    except _Mismatch as e:
        report_error("alf.bin.export", e, FLAGS.verbose)
        return 1
    print(f"Exported {policy.algorithm.name} (iteration {iteration} of {root_dir}) to {output}")
    print(f"  format {fmt}; inputs: {_describe(policy.input_names, policy.input_specs)}")
    print(f"  outputs: {_describe(policy.output_names, policy.output_specs)}")
    if diff is not None:
        print(
            f"  checked on {FLAGS.verify} random observations: max |action difference| {diff:.3g}"
        )
    return 0


def run() -> None:
    """Console entry point."""
    _define_flags()
    app.run(lambda argv: sys.exit(main(argv)), flags_parser=flags_parser("alf.bin.export"))


if __name__ == "__main__":
    run()
