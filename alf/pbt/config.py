"""``PBTConfig``: the knobs of a population-based training member (off unless ``workspace``).

A member is an ordinary ``python -m alf.bin.train`` run with ``--conf_param
PBTConfig.workspace=... --conf_param PBTConfig.policy_idx=K`` (``alf.bin.pbt_launch``
starts them); see ``alf.pbt.member`` for what it does at each interval.
"""

from __future__ import annotations

import dataclasses
import math
import os

import alf
from alf.pbt import mutation as mut
from alf.pbt import rule

#: the objective used when the env reports ``true_objective`` in its env_info
TRUE_OBJECTIVE = "AverageEnvInfo/true_objective"
#: the objective otherwise
AVERAGE_RETURN = "AverageReturn"
#: what an exploiting member does with its replay buffer (``PBTConfig.replay_buffer_on_exploit``)
REPLAY_BUFFER_POLICIES = ("keep", "reset", "copy")
#: the names of ``alf.metrics.EpisodeMetrics.results()`` besides ``AverageEnvInfo/<field>``
EPISODE_METRICS = (
    "AverageReturn",
    "AverageDiscountedReturn",
    "AverageEpisodeLength",
    "NumberOfEpisodes",
    "EnvironmentSteps",
)


@alf.configurable
@dataclasses.dataclass
class PBTConfig:
    """Population-based training of one member (DexPBT's decentralized scheme).

    Attributes:
        workspace: the folder the population shares (``alf.pbt.workspace``); None (the
            default): PBT is off.
        policy_idx: this member's index, in ``[0, num_policies)``.
        num_policies: the size of the population (``policy_idx`` must be below it; a
            decision compares the members present in the workspace).
        interval_steps: env steps between two PBT checks; a check happens at the end of
            the first iteration that reaches a multiple of ``interval_steps``, so members
            of one conf check at the same env steps.
        start_after: env steps after this member's start, or after a change of its
            weights or hyperparameters, before it decides again (it still publishes at
            each check): its objective needs time to reflect the change. (DexPBT restarts
            a member's process for such a change; a resume from a checkpoint restores the
            episode metrics, so it does not count as one.)
        initial_delay: env steps from the start of the experiment before any decision.
        replace_fraction_worst: the worst fraction of the population that may be replaced.
        replace_fraction_best: the best fraction a replaced member copies from.
        replace_threshold_frac_std: the objective gap needed to copy, as a fraction of the
            population's standard deviation.
        replace_threshold_frac_absolute: the gap needed to copy, as a fraction of the
            copied member's |objective|.
        mutation_rate: the probability that each value mutates (at least one always does).
        change_min: the smallest perturbation factor (>= 1).
        change_max: the largest perturbation factor (> 1).
        mutation: the mutable hyperparameters: a mapping ``{"Name.arg": spec}`` or a list
            (``alf.pbt.mutation.mutations_from_config``), or the path of a JSON / YAML
            file of them (``alf.pbt.mutation.load_mutations``).
        objective: the episode metric to maximize (a name of ``EpisodeMetrics.results()``
            of the training episodes, e.g. ``AverageReturn``); None: ``AverageEnvInfo/
            true_objective`` when the env reports ``true_objective``, else ``AverageReturn``.
        seed: seed of this member's PBT draws (candidate and mutations); None: the run's
            ``TrainerConfig.random_seed``. A draw depends only on the seed, ``policy_idx``
            and the env steps of the check.
        initial_values: values this member starts with instead of the conf's, by
            ``Name.arg`` (e.g. one member with a bad learning rate); only on a fresh start.
        mutate_initial: a fresh member other than member 0 first mutates its values
            (DexPBT starts every member so, to diversify the population).
        keep_checkpoints: how many of its newest published checkpoints a member keeps.
        stop_after_check: end the run (with a checkpoint, exit 0) after each check, so a
            launcher can run the members in turns; the member leaves ``pbt/yielded`` in its
            workspace folder when it stops so.
        replay_buffer_on_exploit: what an exploiting member with a replay buffer (an
            off-policy algorithm: SAC, DDPG/TD3, DQN, ...) does with it when it takes the
            source's weights and optimizer state: ``'keep'`` (the default) its own
            buffer, as it is; ``'reset'`` empty it, as at a fresh start: training waits
            again until every env has ``TrainerConfig.initial_collect_steps`` steps
            (acting at random meanwhile for an algorithm with ``random_initial_collect``),
            so a resume from a checkpoint of the emptied buffer continues the same way;
            ``'copy'`` take the source's buffer (every member then publishes its buffer
            with its state, in the same sha256-checked file: each published checkpoint,
            ``keep_checkpoints`` of them, holds a buffer's worth of bytes). With several
            learner ranks, every rank takes the source's rank-0 buffer (as a resume
            does). Ignored by algorithms without a replay buffer (on-policy ones).
    """

    workspace: str | None = None
    policy_idx: int = 0
    num_policies: int = 1
    interval_steps: int = 10_000
    start_after: int = 10_000
    initial_delay: int = 20_000
    replace_fraction_worst: float = rule.DEFAULT_REPLACE_FRACTION_WORST
    replace_fraction_best: float = rule.DEFAULT_REPLACE_FRACTION_BEST
    replace_threshold_frac_std: float = rule.DEFAULT_REPLACE_THRESHOLD_FRAC_STD
    replace_threshold_frac_absolute: float = rule.DEFAULT_REPLACE_THRESHOLD_FRAC_ABSOLUTE
    mutation_rate: float = mut.DEFAULT_MUTATION_RATE
    change_min: float = mut.DEFAULT_CHANGE_MIN
    change_max: float = mut.DEFAULT_CHANGE_MAX
    mutation: object = None
    objective: str | None = None
    seed: int | None = None
    initial_values: dict | None = None
    mutate_initial: bool = False
    keep_checkpoints: int = 3
    stop_after_check: bool = False
    replay_buffer_on_exploit: str = "keep"

    @property
    def enabled(self) -> bool:
        """PBT is on: ``workspace`` is set."""
        return self.workspace is not None

    def __post_init__(self):
        if self.enabled:
            self.check()

    def check(self) -> None:
        """Raise ``ValueError`` naming the first bad field (``PBTConfig.<field> ...``)."""
        if not isinstance(self.workspace, str) or not self.workspace.strip():
            raise ValueError(f"PBTConfig.workspace must be a folder, got {self.workspace!r}")
        _int(self, "num_policies", 1)
        _int(self, "policy_idx", 0)
        if self.policy_idx >= self.num_policies:
            raise ValueError(
                f"PBTConfig.policy_idx must be < num_policies ({self.num_policies}), "
                f"got {self.policy_idx}"
            )
        _int(self, "interval_steps", 1)
        _int(self, "start_after", 0)
        _int(self, "initial_delay", 0)
        _int(self, "keep_checkpoints", 1)
        try:
            rule._check_parameters(
                self.replace_fraction_worst,
                self.replace_fraction_best,
                self.replace_threshold_frac_std,
                self.replace_threshold_frac_absolute,
            )
            mut._check_changes(self.change_min, self.change_max)
        except ValueError as e:
            raise ValueError(f"PBTConfig.{e}") from None
        rate = self.mutation_rate
        if not mut._is_real(rate) or not 0.0 <= rate <= 1.0:
            raise ValueError(f"PBTConfig.mutation_rate must be in [0, 1], got {rate!r}")
        objective = self.objective
        if objective is not None and (
            not isinstance(objective, str)
            or (objective not in EPISODE_METRICS and not objective.startswith("AverageEnvInfo/"))
        ):
            raise ValueError(
                f"PBTConfig.objective must be one of {', '.join(EPISODE_METRICS)} or "
                f"'AverageEnvInfo/<field>', got {objective!r}"
            )
        if self.seed is not None and not _is_int(self.seed):
            raise ValueError(f"PBTConfig.seed must be an int or None, got {self.seed!r}")
        for name in ("mutate_initial", "stop_after_check"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"PBTConfig.{name} must be True or False")
        if self.replay_buffer_on_exploit not in REPLAY_BUFFER_POLICIES:
            raise ValueError(
                "PBTConfig.replay_buffer_on_exploit must be one of "
                f"{', '.join(map(repr, REPLAY_BUFFER_POLICIES))}, "
                f"got {self.replay_buffer_on_exploit!r}"
            )
        specs = self.mutations()
        self._check_initial_values({s.name for s in specs})

    def _check_initial_values(self, names: set) -> None:
        values = self.initial_values
        if values is None:
            return
        if not isinstance(values, dict):
            raise ValueError(f"PBTConfig.initial_values must be a dict, got {values!r}")
        for name, value in values.items():
            if name not in names:
                raise ValueError(
                    f"PBTConfig.initial_values: {name!r} is not in PBTConfig.mutation "
                    f"({', '.join(sorted(names))})"
                )
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"PBTConfig.initial_values: {name!r} must be finite")

    def mutations(self) -> list[mut.Mutation]:
        """The ``Mutation`` of each mutable hyperparameter, from ``mutation``.

        Raises:
            ValueError: no mutation given, or a bad spec or file (``PBTConfig.mutation: ...``).
        """
        value = self.mutation
        if value is None or (hasattr(value, "__len__") and len(value) == 0):
            raise ValueError("PBTConfig.mutation must name at least one hyperparameter")
        try:
            if isinstance(value, (str, os.PathLike)):
                return mut.load_mutations(os.path.expanduser(os.fspath(value)))
            return mut.mutations_from_config(value)
        except ValueError as e:
            raise ValueError(f"PBTConfig.mutation: {e}") from None


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int(config: PBTConfig, name: str, low: int) -> None:
    value = getattr(config, name)
    if not _is_int(value) or value < low:
        raise ValueError(f"PBTConfig.{name} must be an int >= {low}, got {value!r}")
