"""Optional Weights & Biases logging of the scalars alf writes to tensorboard.

``TrainerConfig.use_wandb`` (``alf.bin.train --wandb``) makes the trainer wrap its
``train`` and ``eval`` summary writers in ``MirroredWriter``: every ``add_scalar`` still
goes to the tensorboard file, and is also collected as ``train/<tag>`` or ``eval/<tag>``.
``WandbRun.commit`` logs what was collected as one wandb row per training iteration,
with the columns ``iteration`` and ``env_steps`` (the x-axes: every metric is declared
with ``iteration`` as its step metric, and can be drawn over ``env_steps`` too).

* project and run name: ``TrainerConfig.wandb_project`` (default: the name of the
  directory holding root_dir) and ``TrainerConfig.wandb_run_name`` (default: root_dir's
  own name), so ``~/exp/ppo_cart_pole/seed1`` logs the run ``seed1`` in the project
  ``ppo_cart_pole``;
* config: the operative configuration (``alf.summary.hparams.flat_configuration``)
  and the random seed;
* resume: the run id is kept in ``root_dir/wandb_run.json``; a resumed training run logs
  to the same wandb run (``resume='allow'``). The iterations logged after the checkpoint
  the run resumed from are logged again (wandb keeps both rows);
* wandb's own files go to ``root_dir/wandb`` (``WANDB_DIR`` is not used); offline runs
  (``WANDB_MODE=offline``) stay there, for ``wandb sync``.

wandb is imported only when enabled; a missing package is a start-up error naming the
extra (``pip install 'alf[wandb]'``), and a failing ``wandb.init`` (no credentials, no
network within ``WANDB_INIT_TIMEOUT`` seconds) is one ``WandbError`` line.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import string

RUN_FILE = "wandb_run.json"
"""In root_dir: ``{"id", "project", "name"}`` of the wandb run, for resuming it."""


class WandbError(RuntimeError):
    """wandb could not be set up or failed (one line, naming what to do)."""


def check_available() -> None:
    """Raise ``ValueError`` unless ``wandb`` can be imported (checked at start-up)."""
    try:
        import wandb  # noqa: F401
    except ImportError as e:
        raise ValueError(
            "TrainerConfig.use_wandb (--wandb) needs the wandb package: pip install 'alf[wandb]'"
        ) from e


def default_names(root_dir: str, project: str | None, name: str | None) -> tuple[str, str]:
    """``(project, run name)``: the given ones, else root_dir's parent's and own names."""
    root_dir = os.path.abspath(root_dir)
    parent = os.path.basename(os.path.dirname(root_dir)) or "alf"
    return project or parent, name or os.path.basename(root_dir)


def read_run_file(root_dir: str) -> dict | None:
    """The stored ``wandb_run.json`` of root_dir (None when absent or unreadable)."""
    path = os.path.join(root_dir, RUN_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        logging.warning("Ignoring %s (%s): a new wandb run is started", path, e)
        return None
    return record if isinstance(record, dict) and isinstance(record.get("id"), str) else None


def new_run_id() -> str:
    """A new wandb run id: 8 random lowercase letters and digits, as wandb makes them."""
    alphabet = string.ascii_lowercase + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(8))


def _write_run_file(root_dir: str, record: dict) -> None:
    path = os.path.join(root_dir, RUN_FILE)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


class WandbRun:
    """One wandb run of a training run (see the module doc).

    Args:
        root_dir: the training run's root_dir.
        project: wandb project (None: root_dir's parent's name).
        name: wandb run name (None: root_dir's name).
        config: ``{name: value}`` logged as the run's config.
    """

    def __init__(self, root_dir: str, project=None, name=None, config=None):
        import wandb

        self._wandb = wandb
        self._pending = {}
        record = read_run_file(root_dir)
        project, name = default_names(root_dir, project, name)
        if record is not None and record.get("project") == project:
            run_id = record["id"]
        else:
            run_id = new_run_id()
        wandb_dir = os.path.join(root_dir, "wandb")
        os.makedirs(wandb_dir, exist_ok=True)
        timeout = float(os.environ.get("WANDB_INIT_TIMEOUT", 90))
        try:
            self._run = wandb.init(
                project=project,
                name=name,
                id=run_id,
                resume="allow",
                dir=root_dir,
                config=dict(config or {}),
                settings=wandb.Settings(init_timeout=timeout, console="off"),
            )
        except Exception as e:  # wandb's errors have many types; all end the same way
            text = (str(e).strip() or type(e).__name__).splitlines()[0]
            raise WandbError(
                f"wandb.init failed for project {project!r}, run {name!r}: {text} "
                "(WANDB_MODE=offline logs without an account or network)"
            ) from e
        self.run_id = run_id
        self.project, self.name = project, name
        self.directory = getattr(self._run, "dir", None)
        _write_run_file(root_dir, {"id": run_id, "project": project, "name": name})
        self._run.define_metric("iteration")
        self._run.define_metric("env_steps")
        for prefix in ("train", "eval"):
            self._run.define_metric(f"{prefix}/*", step_metric="iteration")

    def add_scalar(self, key: str, value: float) -> None:
        """Collect ``key``'s value for the next ``commit`` (the last one given wins)."""
        self._pending[key] = float(value)

    def commit(self, iteration: int, env_steps: int) -> None:
        """Log the collected scalars as one row (nothing when none were collected)."""
        if not self._pending:
            return
        row, self._pending = self._pending, {}
        row.update(iteration=int(iteration), env_steps=int(env_steps))
        self._run.log(row)

    def finish(self, iteration: int, env_steps: int) -> None:
        """Log what is left and close the run (idempotent)."""
        if self._run is None:
            return
        try:
            self.commit(iteration, env_steps)
        finally:
            run, self._run = self._run, None
            run.finish()


class MirroredWriter:
    """A ``SummaryWriter`` whose scalars also go to a ``WandbRun`` as ``<prefix>/<tag>``.

    Everything else (histograms, text, flush, close) is the wrapped writer's.
    """

    def __init__(self, writer, wandb_run: WandbRun, prefix: str):
        self._writer = writer
        self._wandb_run = wandb_run
        self._prefix = prefix

    def add_scalar(self, tag, scalar_value, global_step=None, *args, **kwargs):
        self._writer.add_scalar(tag, scalar_value, global_step, *args, **kwargs)
        self._wandb_run.add_scalar(f"{self._prefix}/{tag}", scalar_value)

    def __getattr__(self, name):
        return getattr(self._writer, name)
