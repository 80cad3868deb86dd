"""One member of a PBT population, inside ``PolicyTrainer``'s loop.

``create_member`` returns None unless ``PBTConfig.workspace`` is set. Otherwise, at
start-up (before anything is written), every mutable ``Name.arg`` of
``PBTConfig.mutation`` is resolved to where its value lives in the built algorithm
(``alf.pbt.hyperparameters``; one that cannot be changed in the running process is an
error naming it) and the values in force are applied: those of the checkpoint the run
resumes from, else the conf's (with ``PBTConfig.initial_values``, and mutated when
``PBTConfig.mutate_initial``).

After each training iteration, ``after_iteration`` checks whether the env steps reached
the next multiple of ``PBTConfig.interval_steps``. At such a check the member

1. publishes its algorithm state (weights, optimizers, data transformers; and its replay
   buffer when ``PBTConfig.replay_buffer_on_exploit`` is ``'copy'``), objective and
   hyperparameter values to the workspace, and records its best checkpoint;
2. unless it is waiting (``start_after`` env steps after its last change,
   ``initial_delay`` from the start), reads the population (each peer's newest entry
   with env steps <= its own) and asks ``alf.pbt.rule.decide``;
3. on ``exploit``, loads the source's algorithm state (checked against its own with the
   trainer's checkpoint compatibility check; a peer checkpoint that is missing, corrupt
   or does not fit is skipped with a log line), keeps, empties or copies its replay
   buffer as ``replay_buffer_on_exploit`` says (``alf.pbt.exploit``), has remote samplers
   act with the new weights from the next unroll on, takes the source's values and
   mutates them; on ``mutate_only``, mutates its own; then applies the new values (they
   override what the copied optimizer state holds);
4. appends the decision to the workspace's ``lineage.jsonl`` (old and new values; for an
   exploit with a replay buffer, ``replay_buffer``: the policy and each env's stored
   steps after it) and
   writes the values to tensorboard (``pbt/<Name.arg>``, ``pbt/objective``, over env
   steps) and to ``root_dir/pbt/hyperparameters.json``: the values in force and their
   history, which ``alf_config.py``'s header then quotes.

A check whose workspace files cannot be written (a full disk, a lost mount) is skipped
with one error line; training goes on. The member keeps its own env steps, iteration
and episode metrics: an exploit replaces the algorithm's state (and the replay buffer as
configured). Its PBT
state (values in force, last check, last change, history) is saved in the trainer's
checkpoints, so a resumed member goes on with the values it had. Every random draw of a
check comes from a generator seeded by (``PBTConfig.seed`` or the run's seed,
``policy_idx``, env steps): the same seeds and the same schedule give the same lineage.

**Several learner ranks** (``alf.bin.train --num_processes K``): every rank has a member
with the same state. Rank 0 alone publishes, decides, reads the source's checkpoint and
writes the member's files; the objective is the mean over the ranks that finished an
episode. The change it decides (the new values, and the source's state on an exploit) is
broadcast (``collectives.broadcast_object``) and applied by every rank the same way, so
the copies of the algorithm stay equal; after each change the ranks compare the sha256
of their algorithm states (one log line a rank) and stop with an error if they differ.
With ``'copy'`` every rank takes the source's rank-0 buffer, as a resume does.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import time

import numpy as np

import alf.summary
from alf.parallel import collectives
from alf.pbt import exploit as ex
from alf.pbt import hyperparameters as hp
from alf.pbt import mutation as mut
from alf.pbt import rule
from alf.pbt.config import AVERAGE_RETURN, TRUE_OBJECTIVE, PBTConfig
from alf.pbt.files import atomic_write
from alf.pbt.workspace import Workspace
from alf.utils import run_record

#: the member's record of its values, in its root_dir
HYPERPARAMETERS_FILE = run_record.PBT_HYPERPARAMETERS
#: left in the member's workspace folder when it stops after a check (``stop_after_check``)
YIELDED_FILE = "yielded"
#: left in the member's workspace folder when its training ends
FINISHED_FILE = "finished"

_STATE_VERSION = 1


def create_member(trainer, root_dir: str, resume_state: dict | None) -> PBTMember | None:
    """The trainer's PBT member, or None when ``PBTConfig.workspace`` is not set.

    Args:
        trainer: the ``PolicyTrainer`` (its ``algorithm``, ``env_steps``, ``random_seed``).
        root_dir: the run's root_dir.
        resume_state: the checkpoint the trainer resumes from (None: a fresh run).

    Raises:
        ValueError: a bad ``PBTConfig`` field or a hyperparameter that cannot be changed
            in the running process (naming it).
    """
    config = PBTConfig()
    if not config.enabled:
        return None
    return PBTMember(config, trainer, root_dir, resume_state)


class PBTMember:
    """See the module doc. Built by ``create_member``; writes nothing when built."""

    def __init__(self, config: PBTConfig, trainer, root_dir: str, resume_state: dict | None):
        self._config = config
        self._trainer = trainer
        self._algorithm = trainer.algorithm
        self._root_dir = root_dir
        self._idx = config.policy_idx
        self._specs = config.mutations()
        self._params = hp.resolve_all([s.name for s in self._specs], self._algorithm)
        self._workspace = Workspace(config.workspace, keep_checkpoints=config.keep_checkpoints)
        self._seed = config.seed if config.seed is not None else int(trainer.random_seed)
        self._started = False
        self._start_steps = int(resume_state["env_steps"]) if resume_state else 0
        self.last_check_seconds = None
        state = (resume_state or {}).get("pbt")
        if state is not None:
            self._load_state(state)
            self._check_values("the checkpoint's PBT state")
            self._apply(self._values)
        else:
            kind = self._fresh_state(resume_state)
            self._check_values("PBTConfig.mutation")
            self._apply(self._values)
            iteration = int(resume_state["iteration"]) if resume_state else 0
            self._history = [self._history_record(kind, self._changed_at, iteration, None)]

    # -- state -----------------------------------------------------------------

    def _fresh_state(self, resume_state: dict | None) -> str:
        """Values, last check and last change of a member without PBT state; the kind of
        its first history record."""
        values = {name: param.get() for name, param in self._params.items()}
        env_steps = int(resume_state["env_steps"]) if resume_state else 0
        kind = "start"
        if resume_state is None:
            values.update(self._config.initial_values or {})
            if self._config.mutate_initial and self._idx > 0:
                values = self._mutate(values, self._rng(env_steps, "initial"))
                kind = "initial_mutation"
        self._values = values
        self._last_boundary = env_steps // self._config.interval_steps
        self._changed_at = env_steps
        return kind

    def _check_values(self, where: str) -> None:
        """Each value can mutate as its spec says (else a ``ValueError`` now, not at the
        first decision): a number for ``perturb``, not 0, a discount in (0, 1), ..."""
        for spec in self._specs:
            try:
                mut._check_value(spec, self._values[spec.name])
            except ValueError as e:
                raise ValueError(f"{where}: {e}") from None

    def _load_state(self, state: dict) -> None:
        if not isinstance(state, dict) or state.get("version") != _STATE_VERSION:
            raise ValueError(f"the checkpoint's PBT state is not version {_STATE_VERSION}")
        values = dict(state["values"])
        missing = [name for name in self._params if name not in values]
        if missing:
            raise ValueError(
                f"the checkpoint's PBT state has no value for {', '.join(missing)} "
                "(PBTConfig.mutation changed?)"
            )
        self._values = {name: values[name] for name in self._params}
        self._last_boundary = int(state["last_boundary"])
        self._changed_at = int(state["changed_at"])
        self._history = list(state["history"])

    def state_dict(self) -> dict:
        """The member's state for the trainer's checkpoint (plain values only)."""
        return {
            "version": _STATE_VERSION,
            "values": dict(self._values),
            "last_boundary": self._last_boundary,
            "changed_at": self._changed_at,
            "history": list(self._history),
        }

    @property
    def values(self) -> dict:
        """The hyperparameter values in force, by ``Name.arg``."""
        return dict(self._values)

    @property
    def workspace(self) -> Workspace:
        return self._workspace

    # -- the loop ---------------------------------------------------------------

    def after_iteration(self) -> bool:
        """Run a PBT check if the env steps reached the next interval boundary.

        When training ends with this iteration, leave ``pbt/finished`` in the member's
        workspace folder (the launcher tells a finished member from a stopped one so).

        Returns:
            whether the trainer should stop now (``PBTConfig.stop_after_check``, after a
            check, before the end of training): the member has left ``pbt/yielded``.
        """
        if not self._started:
            self._start()
        env_steps = self._trainer.env_steps
        boundary = env_steps // self._config.interval_steps
        checked = boundary > self._last_boundary
        if checked:
            self._last_boundary = boundary
            start = time.perf_counter()
            self._check(env_steps)
            self.last_check_seconds = time.perf_counter() - start
            logging.info(
                "PBT member %d: check at %d env steps took %.3fs",
                self._idx,
                env_steps,
                self.last_check_seconds,
            )
        if self._training_done():
            self._write_marker(FINISHED_FILE, env_steps)
            return False
        if not (checked and self._config.stop_after_check):
            return False
        self._write_marker(YIELDED_FILE, env_steps)
        logging.info("PBT member %d: stopping after the check (stop_after_check)", self._idx)
        return True

    def _write_marker(self, name: str, env_steps: int) -> None:
        if not collectives.is_main():
            return
        path = os.path.join(self._workspace.pbt_dir(self._idx), name)
        atomic_write(path, json.dumps({"env_steps": env_steps}).encode())

    def _start(self) -> None:
        self._started = True
        if not collectives.is_main():  # rank 0 writes the member's files
            return
        os.makedirs(self._workspace.pbt_dir(self._idx), exist_ok=True)
        self._summarize(self._start_steps, None)
        self._write_record()

    def _check(self, env_steps: int) -> None:
        """One check. With several learner ranks, rank 0 publishes, decides and reads the
        source's state; the change (values, and the state an exploit loads) is broadcast,
        so every rank's copy of the algorithm stays equal."""
        objective, metric = self._objective()  # (over all ranks)
        change = None
        if collectives.is_main():
            self._change = None
            try:
                self._check_main(env_steps, objective, metric)
            except OSError as e:  # WorkspaceWriteError too: the run goes on without PBT now
                logging.error(
                    "PBT member %d: the check at %d env steps failed and is skipped: %s",
                    self._idx,
                    env_steps,
                    e,
                )
            change, self._change = self._change, None
        change = collectives.broadcast_object(change)
        if change is None:
            return
        if not collectives.is_main():
            self._follow(change)
        if collectives.is_active():
            kind = change["history"]["kind"]
            ex.check_ranks_equal(self._algorithm, f"PBT member {self._idx}: after the {kind}")

    def _check_main(self, env_steps: int, objective: float, metric: str) -> None:
        state = ex.published_state(self._algorithm, self._config.replay_buffer_on_exploit)
        iteration = self._trainer.iteration  # training iterations done, as in ckpt-<iteration>
        self._workspace.publish(self._idx, env_steps, iteration, objective, self._values, state)
        state.pop("replay_buffer", None)  # the best checkpoint is for play: no buffer
        self._workspace.record_best(self._idx, objective, iteration, state)
        del state
        rng = self._rng(env_steps, "check")
        decision = self._decide(env_steps, objective, rng)
        old = dict(self._values)
        extra = {}
        copied = None
        if decision.kind == rule.EXPLOIT:
            base, copied, problem = self._exploit(decision.source)
            if base is None:
                decision = rule.Decision(rule.CONTINUE, message=problem)
            else:
                self._values = self._mutate(base, rng)
                extra = {"source_objective": decision.source.objective, **problem}
        elif decision.kind == rule.MUTATE_ONLY:
            self._values = self._mutate(old, rng)
        if decision.kind != rule.CONTINUE:
            record = self._history_record(
                decision.kind, env_steps, self._trainer.iteration, decision.source_idx
            )
            self._change = {"values": dict(self._values), "history": record}
            if copied is not None:  # the other ranks load it too
                self._change["state"] = copied.state if collectives.is_active() else None
            self._apply_change(self._change)
        self._workspace.append_lineage(
            self._idx,
            env_steps,
            decision.kind,
            source=decision.source_idx,
            old=old,
            new=self._values,
            objective=objective if math.isfinite(objective) else None,
            metric=metric,
            message=decision.message,
            **extra,
        )
        logging.info("PBT %s", decision.message)
        self._summarize(env_steps, objective)
        if decision.kind != rule.CONTINUE:
            self._write_record()

    def _apply_change(self, change: dict) -> None:
        """Apply a decided change (an exploit's state is loaded already): the values."""
        if "state" in change:
            ex.weights_replaced(self._algorithm)  # remote samplers act with the new weights
        self._apply(change["values"])
        self._changed_at = change["history"]["env_steps"]
        self._history.append(dict(change["history"], values=dict(self._values)))

    def _follow(self, change: dict) -> None:
        """A rank other than 0: apply the change rank 0 decided, and load the state it
        copied (checked there; the algorithms of all ranks are equal)."""
        if "state" in change:
            policy = self._config.replay_buffer_on_exploit
            ex.SourceState(change["state"], self._algorithm, policy, "rank 0's copy").apply()
        self._apply_change(change)

    def _decide(self, env_steps: int, objective: float, rng: random.Random) -> rule.Decision:
        cfg = self._config
        waiting = []
        if env_steps - self._changed_at < cfg.start_after:
            waiting.append(f"{env_steps - self._changed_at} env steps since its last change")
        if env_steps < cfg.initial_delay:
            waiting.append(f"initial_delay {cfg.initial_delay} not reached")
        if waiting:
            return rule.Decision(
                rule.CONTINUE, message=f"member {self._idx}: waiting ({'; '.join(waiting)})"
            )
        # checkpoints are checked only when one is copied (a pruned one is then skipped)
        entries = self._workspace.population(
            max_env_steps=env_steps, exclude=self._idx, verify=False
        )
        return rule.decide(
            self._idx,
            env_steps,
            objective,
            [entry.as_peer() for entry in entries],
            rng=rng,
            replace_fraction_worst=cfg.replace_fraction_worst,
            replace_fraction_best=cfg.replace_fraction_best,
            replace_threshold_frac_std=cfg.replace_threshold_frac_std,
            replace_threshold_frac_absolute=cfg.replace_threshold_frac_absolute,
        )

    def _exploit(self, source: rule.PeerEntry):
        """Load ``source``'s state (checked first: a state that does not fit changes
        nothing) and treat the replay buffer as ``replay_buffer_on_exploit`` says; return
        the source's values, the ``SourceState`` and the lineage's extra fields, or
        ``(None, None, why not)``."""
        entry = source.checkpoint
        where = os.path.join(self._workspace.pbt_dir(entry.policy_idx), entry.checkpoint)
        policy = self._config.replay_buffer_on_exploit
        copied = ex.SourceState(
            self._workspace.load_checkpoint(entry), self._algorithm, policy, where
        )
        problem = copied.problem
        if problem is None:
            try:
                buffer = copied.apply()
            except (RuntimeError, ValueError, KeyError) as e:
                problem = f"its algorithm state does not load: {e}"
        if problem is not None:
            message = f"member {self._idx}: not copying member {entry.policy_idx}: {problem}"
            logging.warning("PBT %s", message)
            return None, None, message
        base = dict(self._values)
        for name in self._params:
            if name in source.hyperparameters:
                base[name] = source.hyperparameters[name]
            else:
                logging.warning(
                    "PBT member %d: member %d published no value of %s; keeping %r",
                    self._idx,
                    entry.policy_idx,
                    name,
                    base[name],
                )
        return base, copied, ({"replay_buffer": buffer} if buffer else {})

    # -- helpers ----------------------------------------------------------------

    def _training_done(self) -> bool:
        """The trainer stops now anyway (``num_iterations`` / ``num_env_steps`` reached)."""
        cfg = self._algorithm.config
        if cfg is None:
            return False
        trainer = self._trainer
        if cfg.num_iterations > 0 and trainer.iteration >= cfg.num_iterations:
            return True
        return cfg.num_env_steps > 0 and trainer.env_steps >= cfg.num_env_steps

    def _rng(self, env_steps: int, purpose: str) -> random.Random:
        return random.Random(f"alf.pbt:{self._seed}:{self._idx}:{env_steps}:{purpose}")

    def _mutate(self, values: dict, rng: random.Random) -> dict:
        cfg = self._config
        return mut.mutate(
            values, self._specs, rng, cfg.mutation_rate, cfg.change_min, cfg.change_max
        )

    def _apply(self, values: dict) -> None:
        for name, param in self._params.items():
            param.set(values[name])
        # the places may have converted the values (an int to a float): record what they hold
        self._values = {name: param.get() for name, param in self._params.items()}

    def _objective(self) -> tuple[float, str]:
        """The objective now (NaN before any episode ended) and the metric it comes from;
        with several learner ranks, the mean over the ranks that finished an episode (as
        the merged training summaries)."""
        metrics = self._algorithm.metrics
        results = metrics.results()
        name = self._config.objective
        if name is None:
            name = TRUE_OBJECTIVE if TRUE_OBJECTIVE in results else AVERAGE_RETURN
        value = math.nan
        if metrics.has_episodes and name in results:
            value = float(np.mean(np.asarray(results[name], dtype=np.float64)))
        elif metrics.has_episodes:
            logging.warning(
                "PBT member %d: PBTConfig.objective %r is not an episode metric (%s)",
                self._idx,
                name,
                ", ".join(sorted(results)),
            )
        if collectives.is_active():
            values = [v for v in collectives.all_gather_objects(value) if math.isfinite(v)]
            value = sum(values) / len(values) if values else math.nan
        return value, name

    def _history_record(self, kind: str, env_steps: int, iteration: int, source) -> dict:
        return {
            "kind": kind,
            "env_steps": env_steps,
            "iteration": iteration,
            "source": source,
            "values": dict(self._values),
        }

    def _summarize(self, env_steps: int, objective: float | None) -> None:
        with alf.summary.record_if(True):
            for name, value in self._values.items():
                if isinstance(value, (int, float)):
                    alf.summary.scalar(f"pbt/{name}", float(value), step=env_steps)
            if objective is not None and math.isfinite(objective):
                alf.summary.scalar("pbt/objective", objective, step=env_steps)

    def _write_record(self) -> None:
        """``root_dir/pbt/hyperparameters.json``, and ``alf_config.py``'s header quoting it."""
        current = ", ".join(f"{k}={v!r}" for k, v in self._values.items())
        note = [
            f"PBT member {self._idx} of the population in {self._workspace.root}: its "
            "hyperparameters change while it trains, so the values below are those it was "
            "built with.",
            f"In force since {self._history[-1]['env_steps']} env steps: {current}",
            f"History: {HYPERPARAMETERS_FILE}",
        ]
        record = {
            "policy_idx": self._idx,
            "workspace": self._workspace.root,
            "values": dict(self._values),
            "history": self._history,
            "note": note,
        }
        path = os.path.join(self._root_dir, HYPERPARAMETERS_FILE)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        atomic_write(path, (json.dumps(record, indent=2) + "\n").encode())
        if os.path.exists(os.path.join(self._root_dir, run_record.OPERATIVE_CONF)):
            run_record.write_operative_config(self._root_dir)
