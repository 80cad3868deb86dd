r"""Population-based training: ``python -m alf.bin.pbt_launch --conf CONF --workspace DIR
--num_policies N [--max_parallel P]``.

Trains a population of ``N`` members of one conf, each an ``alf.bin.train`` run into
``DIR/NNN`` with ``--conf_param PBTConfig.workspace=DIR --conf_param
PBTConfig.policy_idx=K`` (``alf.pbt.member``: every ``PBTConfig.interval_steps`` env steps
a member publishes its state to ``DIR`` and the worst ones copy better ones and mutate
their hyperparameters). The conf sets ``PBTConfig`` (``mutation`` at least; see
``alf/examples/pbt_ppo_cart_pole_conf.py``).

* ``--conf_param 'Name.arg=value'``: passed to every member (repeatable); PBTConfig's
  ``workspace``, ``policy_idx``, ``num_policies`` and ``stop_after_check`` are the
  launcher's.
* ``--member_conf_param 'K:Name.arg=value'``: passed to member ``K`` only (repeatable),
  e.g. ``'1:PBTConfig.initial_values={"Adam.lr": 1e-6}'``.
* ``--max_parallel P``: most members at once (default ``N``). When ``P < N`` the members
  run in turns, each to its next PBT check (``alf.tuning.pbt.launcher``).
* ``--num_processes K``: each member trains on ``K`` data-parallel learner ranks
  (``alf.bin.train --num_processes K``; default 1): the conf's
  ``create_environment.num_parallel_environments`` and ``TrainerConfig.mini_batch_size``
  are each member's totals and must divide by ``K``. Rank 0 publishes and decides, every
  rank loads what an exploit copies (``alf.pbt.member``).
* ``--max_restarts R``: a member that crashes (non-zero exit other than 2, e.g. killed) is
  started again from its checkpoint at most ``R`` times (default 3).
* ``--backend processes|slurm``: local subprocesses (default; with GPUs, spread
  round-robin over ``CUDA_VISIBLE_DEVICES``), or Slurm jobs through ``submitit``
  (``pip install alf[slurm]``; ``--slurm_partition``, ``--slurm_timeout_min``,
  ``--slurm_cpus_per_task``, ``--slurm_gpus_per_task``).
* ``--status``: print the population table of ``DIR`` (member, launch status, restarts,
  env steps, objective, best objective, lineage counts, the hyperparameters in force:
  ``NNN/pbt/hyperparameters.json``); run nothing.
* ``--stop_timeout S``: after SIGTERM / Ctrl-C (forwarded to the members, which
  checkpoint and exit), the seconds to wait before killing them (default 120).

Seeds: when the conf or a ``--conf_param`` sets ``TrainerConfig.random_seed S``, member
``K`` trains with ``S + K`` (a population of clones would learn nothing from each other),
unless a ``--member_conf_param`` sets its seed; otherwise each member draws its own.

``DIR`` holds the workspace (``alf.pbt.workspace``: ``lineage.jsonl`` and each member's
``NNN/pbt``, ``NNN/best``), each member's root_dir ``NNN``, ``logs/NNN.log`` (its output)
and ``pbt_launch.json`` (the launch and each member's status). The same command again
resumes the population. Bad input prints one error line and exits 2 before anything is
written; the exit status is 1 when a member failed, else 0.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys

from absl import app, flags

from alf.bin import (
    SetupError,
    child_env,
    deferred_logs,
    flags_parser,
    lock_directory,
    one_line,
    refuse_stray_arguments,
)

flags.DEFINE_string("conf", None, "Conf file (.py or .gin) of every member.")
flags.DEFINE_string("workspace", None, "The population's folder.")
flags.DEFINE_integer("num_policies", None, "Number of members.")
flags.DEFINE_integer("max_parallel", None, "Most members at once (default: all).")
flags.DEFINE_multi_string("conf_param", [], "'Name.arg=value' for every member.")
flags.DEFINE_multi_string("member_conf_param", [], "'K:Name.arg=value' for member K.")
flags.DEFINE_enum("backend", "processes", ["processes", "slurm"], "Where members run.")
flags.DEFINE_bool("status", False, "Print the population table of --workspace.")
flags.DEFINE_integer("num_processes", 1, "Data-parallel learner ranks of each member.")
flags.DEFINE_integer("max_restarts", 3, "Restarts of a crashed member.")
flags.DEFINE_float("stop_timeout", 120.0, "Seconds to wait for stopped members before killing.")
flags.DEFINE_bool("store_snapshot", True, "Each member stores a snapshot of the alf source.")
flags.DEFINE_string("slurm_partition", None, "Slurm partition (--backend slurm).")
flags.DEFINE_integer("slurm_timeout_min", 24 * 60, "Slurm time limit of a job, in minutes.")
flags.DEFINE_integer("slurm_cpus_per_task", 4, "CPUs of a Slurm job.")
flags.DEFINE_integer("slurm_gpus_per_task", 0, "GPUs of a Slurm job.")

FLAGS = flags.FLAGS
PROGRAM = "alf.bin.pbt_launch"
_LAUNCHER_NAMES = ("workspace", "policy_idx", "num_policies", "stop_after_check")
_SEED = "TrainerConfig.random_seed"


@dataclasses.dataclass
class Plan:
    """The checked launch."""

    workspace: str
    conf: str
    num_policies: int
    max_parallel: int
    conf_params: list[str]
    member_params: dict[int, list[str]]
    entries: list[dict]


def _param_names(params: list[str], where: str) -> list[str]:
    from alf import config_util

    names = []
    for param in params:
        try:
            name, _ = config_util.parse_conf_param(param)
        except ValueError as e:
            raise SetupError(one_line(e)) from e
        short = name.rsplit(".", 1)
        if len(short) == 2 and short[0].endswith("PBTConfig") and short[1] in _LAUNCHER_NAMES:
            raise SetupError(f"{where} {param!r}: {name} is set by {PROGRAM}")
        names.append(name)
    return names


def _member_params(num_policies: int) -> dict[int, list[str]]:
    result: dict[int, list[str]] = {}
    for value in FLAGS.member_conf_param:
        index, sep, param = value.partition(":")
        if not sep or not index.strip().isdigit():
            raise SetupError(f"--member_conf_param {value!r} must look like 'K:Name.arg=value'")
        idx = int(index)
        if idx >= num_policies:
            raise SetupError(
                f"--member_conf_param {value!r}: member {idx} is not in 0..{num_policies - 1}"
            )
        result.setdefault(idx, []).append(param)
    for idx, params in result.items():
        _param_names(params, f"--member_conf_param for member {idx}:")
    return result


def _check_conf(conf: str, params: list[str], workspace: str, what: str) -> int | None:
    """Load the conf with ``params`` as a member would, check its ``PBTConfig``; return
    its ``TrainerConfig.random_seed``."""
    import alf
    from alf.utils import common

    pbt = [f"PBTConfig.workspace={workspace!r}", "PBTConfig.policy_idx=0"]
    logging.disable(logging.WARNING)
    try:
        common.parse_conf_file(conf, pbt + params)
        alf.config_util.validate_pending_configs()
        from alf.pbt.config import PBTConfig

        config = PBTConfig()
        seed = alf.config_util.get_config_value(_SEED)
        _check_divisible(FLAGS.num_processes)
    except (ValueError, TypeError, FileNotFoundError, KeyError, ImportError) as e:
        raise SetupError(f"{what}: {one_line(e)}") from e
    finally:
        logging.disable(logging.NOTSET)
        alf.config_util.reset_configs()
    if config.num_policies != 1 and config.num_policies != FLAGS.num_policies:
        logging.warning("the conf's PBTConfig.num_policies is replaced by --num_policies")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise SetupError(f"{conf}: {_SEED} must be an int, got {seed!r}")
    return seed


def _check_divisible(num_processes: int) -> None:
    """The global batch settings of the loaded conf divide by the member's learner ranks."""
    import alf
    from alf.environments import utils  # noqa: F401  (defines create_environment)

    names = ("create_environment.num_parallel_environments", "TrainerConfig.mini_batch_size")
    for name in names:
        total = alf.config_util.get_config_value(name)
        if num_processes > 1 and isinstance(total, int) and total % num_processes:
            raise ValueError(
                f"{name}={total} is a member's total over its --num_processes "
                f"{num_processes} learner ranks and must divide by {num_processes}"
            )


def make_plan(workspace: str) -> Plan:
    """Check the flags, the conf and an earlier launch; write nothing."""
    from alf.tuning.pbt import launcher

    if not FLAGS.conf:
        raise SetupError("--conf is required")
    conf = os.path.abspath(os.path.expanduser(FLAGS.conf))
    if not os.path.isfile(conf):
        raise SetupError(f"conf file '{FLAGS.conf}' does not exist")
    num_policies = FLAGS.num_policies
    if num_policies is None or num_policies < 1:
        raise SetupError(f"--num_policies must be a positive int, got {num_policies}")
    max_parallel = num_policies if FLAGS.max_parallel is None else FLAGS.max_parallel
    if max_parallel < 1:
        raise SetupError(f"--max_parallel must be positive, got {max_parallel}")
    if FLAGS.num_processes < 1:
        raise SetupError(f"--num_processes must be >= 1, got {FLAGS.num_processes}")
    if FLAGS.max_restarts < 0:
        raise SetupError(f"--max_restarts must be >= 0, got {FLAGS.max_restarts}")
    max_parallel = min(max_parallel, num_policies)
    conf_params = list(FLAGS.conf_param)
    _param_names(conf_params, "--conf_param")
    member_params = _member_params(num_policies)
    seed = _check_conf(conf, conf_params, workspace, conf)
    for idx, params in sorted(member_params.items()):
        _check_conf(conf, params + conf_params, workspace, f"member {idx}")
    previous = _previous_record(workspace, num_policies)
    in_turns = max_parallel < num_policies
    entries = []
    for idx in range(num_policies):
        params = list(member_params.get(idx, []))
        if seed is not None and _SEED not in _param_names(params, "--member_conf_param"):
            params.append(f"{_SEED}={seed + idx}")  # before the --conf_param values: it wins
        params += conf_params
        command = launcher.member_command(
            conf,
            workspace,
            idx,
            num_policies,
            params,
            in_turns,
            FLAGS.store_snapshot,
            num_processes=FLAGS.num_processes,
        )
        entry = {"policy_idx": idx, "command": command, "status": launcher.PENDING}
        old = previous.get(idx)
        if old is not None:
            entry["attempts"] = old.get("attempts", 0)  # the restart budget is per launch
            done = old.get("status") == launcher.FINISHED and old.get("exit_code") == 0
            if done and os.path.isdir(launcher.member_dir(workspace, idx)):
                entry.update(status=launcher.FINISHED, exit_code=0)
        entries.append(entry)
    return Plan(workspace, conf, num_policies, max_parallel, conf_params, member_params, entries)


def _previous_record(workspace: str, num_policies: int) -> dict[int, dict]:
    from alf.tuning.pbt import launcher

    try:
        record = launcher.read_record(workspace)
    except ValueError as e:
        raise SetupError(one_line(e)) from e
    if record is None:
        return {}
    if record.get("num_policies") != num_policies:
        raise SetupError(
            f"{workspace} holds a population of {record.get('num_policies')} members, "
            f"not {num_policies}"
        )
    return {m["policy_idx"]: m for m in record["members"] if isinstance(m, dict)}


def _backend(workspace: str):
    from alf.tuning.pbt import launcher

    if FLAGS.backend == "slurm":
        parameters = {
            "timeout_min": FLAGS.slurm_timeout_min,
            "cpus_per_task": FLAGS.slurm_cpus_per_task,
            "gpus_per_node": FLAGS.slurm_gpus_per_task,
            "tasks_per_node": 1,
        }
        if FLAGS.slurm_partition:
            parameters["slurm_partition"] = FLAGS.slurm_partition
        return launcher.SlurmBackend(workspace, parameters)
    import torch

    return launcher.ProcessBackend(torch.cuda.device_count(), FLAGS.num_processes)


def _check_backend() -> None:
    if FLAGS.backend != "slurm":
        return
    try:
        import submitit  # noqa: F401
    except ImportError:
        raise SetupError(
            "--backend slurm needs submitit, which is not installed (pip install alf[slurm])"
        ) from None


def _run(plan: Plan) -> int:
    from alf.tuning.pbt import launcher, status

    workspace = plan.workspace
    try:
        lock = lock_directory(workspace, "workspace", "launcher")
    except SetupError as e:
        _error(str(e))
        return 2
    with lock:
        record = {
            "conf": plan.conf,
            "conf_params": plan.conf_params,
            "member_conf_params": {str(k): v for k, v in plan.member_params.items()},
            "num_policies": plan.num_policies,
            "max_parallel": plan.max_parallel,
            "num_processes": FLAGS.num_processes,
            "backend": FLAGS.backend,
            "start_time": launcher.now(),
            "members": plan.entries,
        }
        launcher.write_record(workspace, record)
        logging.info(
            "PBT in %s: %d members of %d learner rank(s), at most %d at once%s",
            workspace,
            plan.num_policies,
            FLAGS.num_processes,
            plan.max_parallel,
            " (in turns)" if plan.max_parallel < plan.num_policies else "",
        )
        runner = launcher.Launcher(
            workspace,
            plan.entries,
            _backend(workspace),
            plan.max_parallel,
            FLAGS.max_restarts,
            FLAGS.stop_timeout,
            save=lambda: launcher.write_record(workspace, record),
            env=child_env(),
        )
        runner.run()
        text = status.status_text(workspace, record)
    print(text, end="")
    return 1 if any(e["status"] == launcher.FAILED for e in plan.entries) else 0


def _status(workspace: str) -> int:
    from alf.tuning.pbt import launcher, status

    try:
        record = launcher.read_record(workspace)
    except ValueError as e:
        _error(one_line(e))
        return 2
    if record is None and not os.path.isdir(workspace):
        _error(f"{workspace} does not exist")
        return 2
    print(status.status_text(workspace, record), end="")
    return 0


def _error(message: str) -> None:
    print(f"{PROGRAM}: error: {message}", file=sys.stderr)


def main(argv) -> int:
    """Launch the population (or print ``--status``); return the exit status."""
    if refuse_stray_arguments("alf.bin.pbt_launch", argv):
        return 2
    if not FLAGS.workspace:
        _error("--workspace is required")
        return 2
    workspace = os.path.abspath(os.path.expanduser(FLAGS.workspace))
    if FLAGS.status:
        return _status(workspace)
    try:
        _check_backend()
        with deferred_logs():
            plan = make_plan(workspace)
    except SetupError as e:
        _error(str(e))
        return 2
    except KeyboardInterrupt:
        print(f"{PROGRAM}: stopped by SIGINT during start-up; nothing was written")
        return 0
    return _run(plan)


def run() -> None:
    """Console entry point."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    app.run(lambda argv: sys.exit(main(argv)), flags_parser=flags_parser("alf.bin.pbt_launch"))


if __name__ == "__main__":
    run()
