r"""Play a trained policy: ``python -m alf.bin.play --root_dir DIR``.

The experiment is rebuilt from the run record in ``root_dir`` (the conf files and
``--conf_param`` values training used, see ``alf.utils.run_record``), the algorithm
is built as training builds it, a checkpoint is loaded (the newest readable one;
``--checkpoint_step N`` for ``ckpt-N.pt``; ``--best`` for ``ckpt-best.pt``; ``--checkpoint
FILE`` for any checkpoint file of the run, such as a PBT member's ``best/best-*.pt``, with
``--root_dir`` then defaulting to the run above the file), and
the deterministic policy (``predict_step``) plays ``--num_episodes`` episodes on
one environment in this process. Each episode's return and length is printed on
a line of its own, then their means.

* ``--record_file out.mp4`` / ``out.gif``: write a video of the episodes (the env
  is made with ``render_mode='rgb_array'``; SDL, if the env renders with pygame, uses its
  headless ``dummy`` drivers in this process unless ``SDL_VIDEODRIVER`` /
  ``SDL_AUDIODRIVER`` are set). ``.mp4`` needs ``imageio`` and its
  ffmpeg plugin (``pip install imageio imageio-ffmpeg``); ``.gif`` needs only pillow.
  Rendering (``alf.summary.render``) is on while recording: the ``render.Image`` objects
  anywhere in the ``info`` of the algorithm's ``predict_step`` are drawn in a grid to the
  right of the env frame of their step, scaled to the frame's height (the first step's
  grid sets the width of every frame). Without images the frames are the env's alone.
* ``--use_alf_snapshot``: run with the copy of the ``alf`` package stored in
  ``root_dir/alf`` at training time instead of the installed one (the code that
  produced the checkpoint), in a fresh Python process; a log line names the snapshot.
* ``--conf_param 'Name.arg=value'`` / ``--gin_param``: override recorded values.
* ``--random_seed S``: seed of the environment and of torch (default 0).
* ``--verbose``: on an error, print its traceback above the one error line.

Bad input (no such root_dir, no run record or checkpoint, a missing step, an
unwritable video format) prints one error line on stderr and exits with status 2.
"""

from __future__ import annotations

import functools
import logging
import os
import subprocess
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

SNAPSHOT_ENV = "ALF_PLAY_SNAPSHOT_ROOT"
"""Set (to the root_dir) in the process started by ``--use_alf_snapshot``; stops recursion."""

VIDEO_FORMATS = (".mp4", ".gif")

FLAGS = flags.FLAGS


def _define_flags() -> None:
    """Define the flags (only when run as a program, so importing this module is inert)."""
    flags.DEFINE_string("root_dir", None, "Root directory of a training run.")
    flags.DEFINE_bool("use_alf_snapshot", False, "Use the alf source stored in root_dir/alf.")
    flags.DEFINE_integer("checkpoint_step", None, "Play ckpt-<step>.pt (default: newest).")
    flags.DEFINE_bool("best", False, "Play ckpt-best.pt (the best evaluation).")
    flags.DEFINE_string(
        "checkpoint", None, "Play this checkpoint file (e.g. a PBT member's best/best-*.pt)."
    )
    flags.DEFINE_integer("num_episodes", 10, "Number of episodes to play.")
    flags.DEFINE_string("record_file", None, "Write a video of the episodes (.mp4 or .gif).")
    flags.DEFINE_integer("fps", 30, "Frames per second of the video.")
    flags.DEFINE_integer("random_seed", 0, "Seed of the environment and of torch.")
    flags.DEFINE_multi_string("conf_param", [], "'Name.arg=value' overrides.")
    flags.DEFINE_multi_string("gin_param", [], "Gin binding overrides.")
    flags.DEFINE_bool("verbose", False, "On an error, print its traceback above the error line.")


# -- snapshot -------------------------------------------------------------------------


def run_in_snapshot(root_dir: str, args: list) -> int:
    """Run ``alf.bin.play args`` in a new Python importing ``alf`` from ``root_dir/alf``.

    Returns:
        the exit status of that process (``128 + signal`` if a signal ended it).
    """
    snapshot = os.path.join(root_dir, "alf")
    if not os.path.isfile(os.path.join(snapshot, "__init__.py")):
        raise SetupError(
            f"{root_dir} has no alf snapshot ({snapshot}); it was trained with "
            "--nostore_snapshot: play without --use_alf_snapshot"
        )
    code = (
        "import runpy, sys\n"
        f"sys.path.insert(0, {root_dir!r})\n"
        "runpy.run_module('alf.bin.play', run_name='__main__', alter_sys=True)\n"
    )
    env = dict(os.environ, **{SNAPSHOT_ENV: root_dir})
    status = subprocess.call([sys.executable, "-c", code, *args], env=env)
    return 128 - status if status < 0 else status


def _check_snapshot_import(root_dir: str) -> None:
    """In the snapshot process: make sure ``alf`` really came from ``root_dir/alf``."""
    import alf

    snapshot = os.path.realpath(os.path.join(root_dir, "alf"))
    if not os.path.realpath(alf.__file__).startswith(snapshot + os.sep):
        raise SetupError(f"alf was imported from {alf.__file__}, not from the snapshot {snapshot}")
    logging.info("Using the alf snapshot %s (alf imported from it)", snapshot)


# -- experiment ----------------------------------------------------------------------


def check_record_file(record_file: str) -> None:
    """Raise ``SetupError`` unless a video can be written to ``record_file``."""
    ext = os.path.splitext(record_file)[1].lower()
    if ext not in VIDEO_FORMATS:
        raise SetupError(f"--record_file must end with one of {VIDEO_FORMATS}, got '{record_file}'")
    directory = os.path.dirname(os.path.abspath(record_file))
    if not os.path.isdir(directory):
        raise SetupError(f"the directory of --record_file does not exist: {directory}")
    try:
        if ext == ".gif":
            import PIL.Image  # noqa: F401
        else:
            import imageio  # noqa: F401
            import imageio_ffmpeg  # noqa: F401
    except ImportError as e:
        need = "pillow" if ext == ".gif" else "imageio imageio-ffmpeg"
        raise SetupError(
            f"writing a {ext} video needs {e.name}: pip install {need}"
            + (" (or record a .gif)" if ext != ".gif" else "")
        ) from e


def load_checkpoint(
    root_dir: str, step: int | None = None, best: bool = False, path: str | None = None
) -> dict:
    """The checkpoint of ``root_dir`` (newest readable, ``ckpt-<step>.pt`` or the best), or
    the checkpoint file ``path`` (loaded as safely: tensors and plain data only).

    Raises:
        SetupError: no such checkpoint, none readable, or one whose weights are not finite.
    """
    from alf.utils.checkpoint_utils import BEST_NAME, Checkpointer, CheckpointError, safe_load
    from alf.utils.finite import first_non_finite

    checkpointer = Checkpointer(os.path.join(root_dir, "train", "algorithm"))
    state = None
    if path is None:
        path = os.path.join(checkpointer.directory, BEST_NAME)
    try:
        if path != os.path.join(checkpointer.directory, BEST_NAME):
            state = safe_load(path)
        elif best:
            state = checkpointer.load_best()
        elif step is not None:
            path, state = checkpointer.path(step), checkpointer.load(step)
        else:
            path, state = checkpointer.load_newest() or (None, None)
    except CheckpointError as e:
        raise SetupError(one_line(e)) from e
    if state is None:
        raise SetupError(f"{root_dir} has no checkpoint in {checkpointer.directory}")
    if "algorithm" not in state:
        raise SetupError(f"the checkpoint {path} holds no algorithm state")
    culprit = first_non_finite(state["algorithm"], prefix="algorithm")
    if culprit is not None:
        raise SetupError(f"the checkpoint {path} holds non-finite weights: {culprit}")
    return state


#: SDL (pygame's renderer, e.g. of the classic-control envs) picks a display and an audio
#: device when it starts; rendering to arrays needs neither, and without a desktop session
#: its probing prints "error: XDG_RUNTIME_DIR is invalid or not set" (and ALSA chatter)
HEADLESS_SDL = {"SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy"}


def _render_load_fn():
    """The configured ``create_environment.env_load_fn``, making envs with rgb_array render
    (SDL set headless in this process: ``HEADLESS_SDL``, unless the user set those)."""
    import alf

    for name, value in HEADLESS_SDL.items():
        os.environ.setdefault(name, value)

    env_load_fn = alf.get_config_value("create_environment.env_load_fn")
    return functools.partial(env_load_fn, render_mode="rgb_array")


def build_experiment(root_dir: str, conf_params=(), gin_params=(), seed: int = 0, render=False):
    """Parse the recorded conf and build one env and the algorithm, as training does.

    Args:
        root_dir: the run's root directory (with ``config_files/run.json``).
        conf_params: ``--conf_param`` values overriding the recorded ones.
        gin_params: ``--gin_param`` values added to the recorded ones.
        seed: seed of torch/numpy/python and of the env.
        render: make the env with ``render_mode='rgb_array'``.

    Returns:
        ``(env, algorithm)``: a batched env of size 1 in this process and the
        algorithm (in eval mode) on the configured device.
    """
    from alf.algorithms.config import TrainerConfig
    from alf.algorithms.factory import create_algorithm
    from alf.environments.utils import create_environment
    from alf.utils import common, device, run_record, seeding, torch_utils

    conf, recorded_params, recorded_gin = run_record.read_run_record(root_dir)
    params = run_record.merge_conf_params(recorded_params, conf_params)
    params.append(f"TrainerConfig.root_dir={root_dir!r}")
    common.parse_conf_file(conf, params, list(gin_params) + list(recorded_gin))
    config = TrainerConfig()
    seeding.set_random_seed(seed)
    torch_utils.configure_cpu_math(
        config.num_threads, config.flush_denormal, config.matmul_precision
    )
    kwargs = {"env_load_fn": _render_load_fn()} if render else {}
    env = create_environment(num_parallel_environments=1, nonparallel=True, seed=seed, **kwargs)
    try:
        algorithm = create_algorithm(config, env, device.set_device(config.device))
    except BaseException:
        env.close()
        raise
    algorithm.eval()
    return env, algorithm


# -- playing -------------------------------------------------------------------------


def play_episodes(algorithm, env, num_episodes: int, on_frame=None, on_episode=None) -> list:
    """Play ``num_episodes`` episodes of ``algorithm.predict_step`` on ``env`` (batch size 1).

    Args:
        algorithm: an ``RLAlgorithm``; its data transformer is applied to the time steps.
        env: a batched environment of batch size 1.
        num_episodes: number of episodes to finish.
        on_frame: called with ``env.render('rgb_array')`` after every reset and step.
        on_episode: called as ``on_episode(index, episode_return, length)`` as each
            episode ends (index from 0).

    Returns:
        ``[(episode_return, length)]``; a return is a float, or a list of floats
        for a vector reward.
    """
    from alf.learners.unroller import AlgorithmPolicy, Unroller
    from alf.metrics import EpisodeMetrics

    report = _EpisodeReport(on_episode)

    def observe(time_step):
        if on_frame is not None:
            on_frame(env.render("rgb_array"))
        report(time_step)

    policy = AlgorithmPolicy(algorithm, "predict")
    if on_frame is not None:
        frames = _FramesWithImages(on_frame)
        on_frame = frames.add_frame
        predict = policy.step

        def step(*args, **kwargs):
            alg_step = predict(*args, **kwargs)
            frames.add_info(alg_step.info)
            return alg_step

        policy.step = step
    unroller = Unroller(policy, env, EpisodeMetrics(1))
    unroller.run_episodes(num_episodes, observe=observe)
    if on_frame is not None:
        frames.flush()
    return report.episodes


class _FramesWithImages:
    """Hands each env frame to ``on_frame`` with the ``render.Image`` objects of the
    ``info`` of its step's policy step beside it (a frame waits for that step; the
    last one, not acted on, gets an empty panel).

    Args:
        on_frame: called with each ``[H, W, 3]`` uint8 frame.
    """

    def __init__(self, on_frame):
        self._on_frame = on_frame
        self._frame = None
        self._info = None
        self._panel_size = None  # (height, width) of the image panel, set by the first

    def add_frame(self, frame) -> None:
        self.flush()
        self._frame = frame

    def add_info(self, info) -> None:
        self._info = info

    def flush(self) -> None:
        if self._frame is not None:
            self._on_frame(self._compose(self._frame, self._info))
        self._frame = self._info = None

    def _compose(self, frame, info):
        import numpy as np

        from alf.summary.render import Image

        panel = Image.pack_image_nest(info) if info is not None else None
        if panel is None and self._panel_size is None:
            return frame
        height = frame.shape[0]
        if self._panel_size is None:
            width = max(1, round(panel.shape[1] * height / panel.shape[0]))
            self._panel_size = (height, width)
        box = np.full((*self._panel_size, 3), 255, dtype=np.uint8)
        if panel is not None:
            h, w = self._panel_size
            scale = min(h / panel.shape[0], w / panel.shape[1])
            fitted = panel.resize(
                height=max(1, int(panel.shape[0] * scale)),
                width=max(1, int(panel.shape[1] * scale)),
            ).data
            box[: fitted.shape[0], : fitted.shape[1]] = fitted
        return Image.stack_images([Image(np.asarray(frame, dtype=np.uint8)), Image(box)]).data


class _EpisodeReport:
    """Sums the return and length of the episode being played (batch size 1) and
    reports each as it ends."""

    def __init__(self, on_episode=None):
        self._on_episode = on_episode
        self.episodes = []
        self._return, self._length = 0.0, 0

    def __call__(self, time_step) -> None:
        from alf.data_structures import StepType

        step_type = int(time_step.step_type[0])
        if step_type != StepType.FIRST:
            self._return = self._return + time_step.reward[0].double().numpy()
            self._length += 1
        if step_type == StepType.LAST:
            self.episodes.append((_as_return(self._return), self._length))
            if self._on_episode is not None:
                self._on_episode(len(self.episodes) - 1, *self.episodes[-1])
            self._return, self._length = 0.0, 0


def _as_return(value):
    import numpy as np

    value = np.asarray(value, dtype=np.float64)
    return float(value) if value.size == 1 else [float(x) for x in value.reshape(-1)]


def _format_return(value) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(f"{x:.3f}" for x in value) + "]"
    return f"{value:.3f}"


def _print_episode(index: int, episode_return, length: int) -> None:
    print(f"Episode {index + 1}: return {_format_return(episode_return)}, length {length}")
    sys.stdout.flush()


def _print_mean(episodes: list) -> None:
    import numpy as np

    returns = np.mean(np.array([r for r, _ in episodes], dtype=np.float64), axis=0)
    length = np.mean([n for _, n in episodes])
    noun = "episode" if len(episodes) == 1 else "episodes"
    print(
        f"Mean over {len(episodes)} {noun}: return {_format_return(_as_return(returns))}, "
        f"length {length:.1f}"
    )


# -- video ---------------------------------------------------------------------------


class VideoWriter:
    """Collects ``[H, W, 3]`` uint8 frames and writes ``path`` (.mp4 or .gif) on ``close``.

    The file is written aside and renamed, so an interrupted play leaves no broken
    video. ``.mp4`` goes through imageio's ffmpeg plugin (frames are streamed);
    ``.gif`` through pillow (frames are kept in memory).

    Args:
        path: the video file.
        fps: frames per second.
    """

    def __init__(self, path: str, fps: int = 30):
        self._path = os.path.abspath(path)
        self._fps = fps
        self._ext = os.path.splitext(path)[1].lower()
        fd, self._tmp = tempfile.mkstemp(
            dir=os.path.dirname(self._path), prefix=".tmp-video-", suffix=self._ext
        )
        os.close(fd)
        self._frames = []
        self._writer = None
        if self._ext != ".gif":
            import imageio.v2 as imageio

            # H.264 in yuv420p needs even sizes; 2 (not 16) keeps e.g. CartPole's 600x400 as is.
            self._writer = imageio.get_writer(
                self._tmp, fps=fps, format="FFMPEG", macro_block_size=2
            )
        self.num_frames = 0

    def append(self, frame) -> None:
        if self._writer is not None:
            self._writer.append_data(frame)
        else:
            self._frames.append(frame)
        self.num_frames += 1

    def close(self, keep: bool = True) -> None:
        """Finish the file and move it in place (``keep=False``: discard it)."""
        try:
            if self._writer is not None:
                self._writer.close()
            elif keep and self._frames:
                self._write_gif()
            if keep and self.num_frames:
                umask = os.umask(0)
                os.umask(umask)
                os.chmod(self._tmp, 0o666 & ~umask)
                os.replace(self._tmp, self._path)
        finally:
            if os.path.exists(self._tmp):
                os.remove(self._tmp)

    def _write_gif(self) -> None:
        from PIL import Image

        images = [Image.fromarray(frame) for frame in self._frames]
        images[0].save(
            self._tmp,
            save_all=True,
            append_images=images[1:],
            duration=max(int(round(1000 / self._fps)), 1),
            loop=0,
        )


# -- main ----------------------------------------------------------------------------


def run_dir_of(checkpoint: str) -> str | None:
    """The nearest directory above the file ``checkpoint`` that holds a training run (a
    PBT member's ``best/`` file lies in the member's root_dir)."""
    directory = os.path.dirname(os.path.abspath(checkpoint))
    while True:
        if os.path.isfile(os.path.join(directory, "config_files", "run.json")):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def _check_flags() -> str:
    """Validate the flags; return the absolute root_dir."""
    if FLAGS.checkpoint is not None:
        if not os.path.isfile(FLAGS.checkpoint):
            raise SetupError(f"--checkpoint {FLAGS.checkpoint} is not a file")
        if FLAGS.best or FLAGS.checkpoint_step is not None:
            raise SetupError("give --checkpoint alone, not with --best or --checkpoint_step")
    if not FLAGS.root_dir and FLAGS.checkpoint is not None:
        FLAGS.root_dir = run_dir_of(FLAGS.checkpoint)
        if FLAGS.root_dir is None:
            raise SetupError(f"no training run (config_files/run.json) above {FLAGS.checkpoint}")
    if not FLAGS.root_dir:
        raise SetupError("--root_dir is required")
    root_dir = os.path.abspath(os.path.expanduser(FLAGS.root_dir))
    if not os.path.isdir(root_dir):
        raise SetupError(f"root_dir {root_dir} does not exist")
    if not os.path.isfile(os.path.join(root_dir, "config_files", "run.json")):
        raise SetupError(f"{root_dir} holds no training run (no config_files/run.json)")
    if FLAGS.num_episodes < 1:
        raise SetupError(f"--num_episodes must be >= 1, got {FLAGS.num_episodes}")
    if FLAGS.best and FLAGS.checkpoint_step is not None:
        raise SetupError("give at most one of --best and --checkpoint_step")
    if FLAGS.fps < 1:
        raise SetupError(f"--fps must be >= 1, got {FLAGS.fps}")
    if FLAGS.record_file:
        check_record_file(FLAGS.record_file)
    return root_dir


def _setup(root_dir: str):
    """Load the checkpoint, build the env and algorithm, restore the algorithm."""
    checkpoint = None if FLAGS.checkpoint is None else os.path.abspath(FLAGS.checkpoint)
    state = load_checkpoint(root_dir, FLAGS.checkpoint_step, FLAGS.best, checkpoint)
    try:
        env, algorithm = build_experiment(
            root_dir,
            FLAGS.conf_param,
            FLAGS.gin_param,
            seed=FLAGS.random_seed,
            render=bool(FLAGS.record_file),
        )
    except (ValueError, TypeError, FileNotFoundError, KeyError, ImportError) as e:
        raise SetupError(one_line(e)) from e
    try:
        algorithm.load_state_dict(state["algorithm"])
    except (RuntimeError, KeyError, ValueError) as e:
        env.close()
        raise SetupError(f"the checkpoint does not fit the algorithm: {one_line(e)}") from e
    logging.info(
        "Playing iteration %s of %s (%d env steps)",
        state.get("iteration"),
        root_dir,
        int(state.get("env_steps", 0)),
    )
    return env, algorithm


def _play_and_report(env, algorithm) -> None:
    from alf.summary import render

    recorder, done = None, False
    try:
        if FLAGS.record_file:
            recorder = VideoWriter(FLAGS.record_file, FLAGS.fps)
        with render.rendering(recorder is not None):
            episodes = play_episodes(
                algorithm,
                env,
                FLAGS.num_episodes,
                on_frame=recorder.append if recorder else None,
                on_episode=_print_episode,
            )
        done = True
    finally:
        if recorder is not None:
            recorder.close(keep=done)
        env.close()
    _print_mean(episodes)
    if recorder is not None:
        print(f"Video of {recorder.num_frames} frames written to {FLAGS.record_file}")


def main(argv) -> int:
    """Play (see the module doc); return the exit status."""
    if refuse_stray_arguments("alf.bin.play", argv):
        return 2
    try:
        root_dir = _check_flags()
        if FLAGS.use_alf_snapshot and os.environ.get(SNAPSHOT_ENV) != root_dir:
            return run_in_snapshot(root_dir, sys.argv[1:])
        with deferred_logs():
            if FLAGS.use_alf_snapshot:
                _check_snapshot_import(root_dir)
            env, algorithm = _setup(root_dir)
    except SetupError as e:
        report_error("alf.bin.play", e, FLAGS.verbose)
        return 2
    try:
        _play_and_report(env, algorithm)
    except KeyboardInterrupt:
        print("alf.bin.play: interrupted", file=sys.stderr)
        return 130
    except ImportError as e:  # e.g. matplotlib, needed once the algorithm renders images
        report_error("alf.bin.play", e, FLAGS.verbose)
        return 2
    return 0


def run() -> None:
    """Console entry point."""
    _define_flags()
    app.run(lambda argv: sys.exit(main(argv)), flags_parser=flags_parser("alf.bin.play"))


if __name__ == "__main__":
    run()
