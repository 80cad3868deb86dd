"""``TrainerConfig``: the knobs of the training loop, with ALF's names and meanings."""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Callable
from typing import Any

import alf
from alf.algorithms import alf_trainer_fields

#: ``torch.set_float32_matmul_precision``'s values
MATMUL_PRECISIONS = ("highest", "high", "medium")


@alf.configurable
@dataclasses.dataclass
class TrainerConfig:
    """Configuration of ``PolicyTrainer`` and of an RL algorithm's training iteration.

    Attributes:
        root_dir: where summaries, checkpoints, the resolved config and the code
            snapshot are written.
        algorithm_ctor: called as ``algorithm_ctor(observation_spec=...,
            action_spec=..., reward_spec=..., env=..., config=self)`` to build the
            ``RLAlgorithm``.
        data_transformer_ctor: a ctor or list of ctors of data transformers, each
            called as ``ctor(observation_spec=...)``.
        random_seed: seed of everything (numpy, torch, python, envs as
            ``seed + env_id``); a random seed is drawn and logged when None.
        num_iterations: number of training iterations (0: no limit by iterations).
        num_env_steps: number of environment steps (0: no limit by steps). Training
            stops at whichever limit is hit first.
        unroll_length: steps each environment takes per iteration. One iteration
            collects ``num_envs * unroll_length`` steps.
        use_rollout_state: off-policy training of recurrent models starts each
            minibatch sequence from the state stored at rollout (else zeros).
        temporally_independent_train_step: call ``train_step`` on all time steps
            of a minibatch at once (``None``: when the algorithm has no train
            state).
        num_checkpoints: how many checkpoints to write over the run (evenly
            spaced); the last ``keep_checkpoints`` plus the best are kept.
        keep_checkpoints: number of most recent checkpoints kept on disk.
        checkpoint_interval: write a checkpoint every so many iterations
            (overrides ``num_checkpoints`` when > 0).
        save_checkpoint_for_best_eval: keep the checkpoint with the best eval
            AverageReturn as ``ckpt-best``.
        evaluate: run periodic evaluation with the deterministic policy.
        eval_interval: evaluate every so many iterations.
        num_eval_episodes: episodes per evaluation.
        num_eval_environments: environments used for evaluation.
        epsilon_greedy: chance of a random action during evaluation (for
            discrete actions; 0 means fully deterministic).
        no_thread_env_for_conf: ALF's eval-env rule — the eval environments are
            built in the main process (``nonparallel``) unless this is True.
        summary_interval: write training summaries every so many iterations.
        summaries_flush_secs: flush tensorboard files every so many seconds.
        debug_summaries: extra (slower) summaries from algorithms.
        summarize_grads_and_vars: gradient and parameter norms per module.
        progress_bar: terminal progress bar (only when stdout is a terminal; a log line
            clears it first and it is redrawn after).
        initial_collect_steps: off-policy: steps per environment collected before
            the first update.
        num_prenormalization_steps: before training starts (not when resuming), step
            every training env this many times with the initial policy to initialize
            the statistics of the data transformers (``ObservationNormalizer``,
            ``RewardNormalizer``); that data is neither stored nor trained on, but the
            steps count as environment steps (``EnvironmentSteps``, ``num_env_steps``).
            See ``RLAlgorithm.prenormalize``.
        num_updates_per_train_iter: off-policy: passes (epochs) over the data
            (whole-buffer training) or number of minibatches (sampling) per
            iteration.
        mini_batch_size: number of sequences per minibatch (None: all).
        mini_batch_length: length of each minibatch sequence (None:
            ``unroll_length``).
        trajectory_mini_batches: whole-buffer training on whole episode segments
            (each env's unroll cut at FIRST steps) instead of ``mini_batch_length``
            pieces: ``mini_batch_size`` segments per minibatch, padded to the
            longest and masked (padding never counts), each started from its
            rollout state. For recurrent policies (see
            ``alf/algorithms/trajectory_batching.py`` and docs/recurrent_ppo.md).
        whole_replay_buffer_training: replay learners (off-policy algorithms): train
            on the whole buffer, shuffled and split into minibatches, instead of
            sampling. None (default): as the algorithm's data regime has it —
            sampling for off-policy algorithms; PPO always trains on its whole
            (latest) unroll and refuses False. See ``alf/algorithms/learners.py``.
        clear_replay_buffer: replay learners: clear the replay buffer after each
            training iteration. None (default): as the algorithm's data regime has
            it — kept for off-policy algorithms; PPO always clears and refuses False.
        replay_buffer_length: steps stored per environment.
        priority_replay: prioritized sampling (see ``ReplayLearner``).
        priority_replay_alpha: exponent of priorities.
        priority_replay_beta: importance-weight exponent.
        priority_replay_eps: minimum priority.
        checkpoint_replay_buffer: save the replay buffer's contents, pointers and
            priorities in checkpoints so a resumed run continues with its buffer
            (a warning is logged when it exceeds 512 MB).
        num_threads: torch intra-op threads in the training process (0: torch's
            default, one per core). 1 by default: the small networks of typical
            RL runs gain nothing from intra-op parallelism, and on a busy machine
            (environment workers, other jobs) extra threads spin and wait: PPO on
            CartPole measured 8x slower with 2 threads than with 1 on a loaded
            2-core machine.
        flush_denormal: treat subnormal floats (nonzero ``|x| < 1.2e-38``) as 0 in
            CPU arithmetic (``torch.set_flush_denormal``). True by default: Adam's
            first moment of weights whose gradient is almost always 0 (ReLU units
            that rarely fire) decays through the subnormal range, where x86 CPU
            arithmetic is many times slower. In SAC on Pendulum 49% of the actor's
            second-layer ``exp_avg`` entries were subnormal after 5,000 steps, and
            those 5,000 steps took 13% longer without flushing. Learning is
            unaffected beyond values below 1.2e-38 becoming 0. No effect on CUDA
            tensors.
        keep_freed_memory: where the C library is glibc (Linux), keep freed memory
            in the training process for the next update instead of returning it to
            the OS and faulting it in again (``alf.utils.malloc``). A SAC Pendulum
            iteration made 251 page faults without it and 0.03 with it.
        matmul_precision: the precision of float32 matrix products
            (``torch.set_float32_matmul_precision``): ``'highest'`` (the default:
            float32 throughout), ``'high'`` or ``'medium'``. ``'medium'`` lets the
            CPU's AMX units multiply in bfloat16 (8-bit mantissa) with float32 sums,
            where the CPU has them (Intel Sapphire Rapids and later; TF32/bfloat16 on
            CUDA): on such a Xeon a 256x256 product ran 3.6x faster, SAC's update on
            Pendulum 1.3x. It changes the numbers a run computes, so a seed's curve
            differs from that of ``'highest'``.
        max_non_finite_updates_in_a_row: an update whose loss or gradient norm is
            NaN or inf is skipped (no optimizer step; counted in the summary
            ``loss/non_finite_updates_skipped`` and logged); this many skipped in a
            row stop the run with an error (the weights have diverged).
        device: ``'cpu'``, ``'cuda'`` or None (cuda when available). The one place
            the training device is chosen.
        init_from: start a new run from the weights of another run: that
            run's ``root_dir`` (its newest readable checkpoint), a checkpoint
            directory, or a checkpoint file (``ckpt-<step>.pt``, ``ckpt-best.pt``).
            Only the algorithm's module state is taken (not optimizers, counters,
            RNG or replay buffer); the other run is only read. Ignored (with a log
            line) when ``root_dir`` already has a checkpoint: the run resumes. See
            ``alf.utils.init_from``.
        init_from_normalizers: with ``init_from``, also take the data transformers'
            state (normalizer statistics); False starts them afresh.
        use_wandb: also log the summary scalars to Weights & Biases (``alf.bin.train
            --wandb``; needs ``pip install 'alf[wandb]'``; see docs/ecosystem.md). A
            resumed run continues the wandb run whose id is kept in root_dir.
        wandb_project: the wandb project (None: the name of root_dir's parent directory).
        wandb_run_name: the wandb run's name (None: root_dir's own name).

    ALF's other fields (``num_summaries``, ``num_evals``, ``summarize_gradient_noise_scale``,
    ...) are accepted: ``alf_trainer_fields`` maps each value set to alf's equivalent,
    warns that it has no effect, or refuses it, naming the field.
    """

    root_dir: str | None = None
    algorithm_ctor: Callable | None = None
    data_transformer_ctor: Any = None
    random_seed: int | None = None
    num_iterations: int = 1000
    num_env_steps: int = 0
    unroll_length: int = 8
    use_rollout_state: bool = False
    temporally_independent_train_step: bool | None = None
    num_checkpoints: int = 10
    keep_checkpoints: int = 3
    checkpoint_interval: int = 0
    save_checkpoint_for_best_eval: bool = True
    evaluate: bool = False
    eval_interval: int = 10
    num_eval_episodes: int = 10
    num_eval_environments: int = 1
    epsilon_greedy: float = 0.0
    no_thread_env_for_conf: bool = False
    summary_interval: int = 10
    summaries_flush_secs: int = 1
    debug_summaries: bool = False
    summarize_grads_and_vars: bool = False
    progress_bar: bool = True
    initial_collect_steps: int = 0
    num_prenormalization_steps: int = 0
    num_updates_per_train_iter: int = 4
    mini_batch_size: int | None = None
    mini_batch_length: int | None = None
    whole_replay_buffer_training: bool | None = None
    trajectory_mini_batches: bool = False
    clear_replay_buffer: bool | None = None
    replay_buffer_length: int = 1024
    priority_replay: bool = False
    priority_replay_alpha: float = 0.7
    priority_replay_beta: float = 0.4
    priority_replay_eps: float = 1e-6
    checkpoint_replay_buffer: bool = True
    num_threads: int = 1
    flush_denormal: bool = True
    keep_freed_memory: bool = True
    matmul_precision: str = "highest"
    max_non_finite_updates_in_a_row: int = 10
    device: str | None = None
    init_from: str | None = None
    init_from_normalizers: bool = True
    use_wandb: bool = False
    wandb_project: str | None = None
    wandb_run_name: str | None = None
    # ALF's fields that alf has no field for: mapped, warned or refused (alf_trainer_fields)
    async_eval: Any = None
    async_unroll: Any = None
    code_snapshots: Any = None
    conf_file: Any = None
    confirm_checkpoint_upon_crash: Any = None
    ddp_paras_check_interval: Any = None
    empty_cache: Any = None
    enable_amp: Any = None
    eval_uncertainty: Any = None
    mask_out_loss_for_last_step: Any = None
    max_unroll_length: Any = None
    metric_min_buffer_size: Any = None
    ml_type: Any = None
    normalize_importance_weights_by_max: Any = None
    num_evals: Any = None
    num_summaries: Any = None
    offline_buffer_dir: Any = None
    offline_buffer_length: Any = None
    profiling: Any = None
    rl_train_after_update_steps: Any = None
    rl_train_every_update_steps: Any = None
    summarize_action_distributions: Any = None
    summarize_first_interval: Any = None
    summarize_gradient_noise_scale: Any = None
    summarize_output: Any = None
    summary_max_queue: Any = None
    sync_progress_to_envs: Any = None
    unroll_parameter_update_period: Any = None
    unroll_queue_size: Any = None
    unroll_step_interval: Any = None
    unroll_with_grad: Any = None
    update_counter_every_mini_batch: Any = None
    use_root_inputs_for_after_train_iter: Any = None
    visualize_alf_tree: Any = None

    def __post_init__(self):
        alf_trainer_fields.apply(self)
        self._check()

    def _check(self):
        self._check_types()
        positive = ["unroll_length", "eval_interval", "summary_interval", "replay_buffer_length"]
        for name in positive:
            if getattr(self, name) <= 0:
                raise ValueError(f"TrainerConfig.{name} must be > 0, got {getattr(self, name)}")
        for name in ["mini_batch_size", "mini_batch_length"]:
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"TrainerConfig.{name} must be > 0 or None, got {value}")
        if self.num_iterations <= 0 and self.num_env_steps <= 0:
            raise ValueError(
                "TrainerConfig needs a stopping rule: num_iterations > 0 or num_env_steps > 0"
            )
        if self.matmul_precision not in MATMUL_PRECISIONS:
            raise ValueError(
                f"TrainerConfig.matmul_precision must be one of {MATMUL_PRECISIONS}, "
                f"got {self.matmul_precision!r}"
            )
        if not 0.0 <= self.epsilon_greedy <= 1.0:
            raise ValueError(
                f"TrainerConfig.epsilon_greedy must be in [0, 1]: {self.epsilon_greedy}"
            )

    def _check_types(self):
        """Values of the fields annotated with plain types (``int``, ``float | None``, ...)
        must have those types; an error names the field, the expected and the given type.
        A flag (``bool``) set to the integer 0 or 1, as ALF's confs do, becomes False / True."""
        for field in dataclasses.fields(self):
            allowed = _SIMPLE_TYPES.get(str(field.type))
            value = getattr(self, field.name)
            if allowed is not None and bool in allowed and _is_zero_or_one(value):
                value = bool(value)  # ALF's confs write flags as 0 / 1
                setattr(self, field.name, value)
            if allowed is None or _has_type(value, allowed):
                continue
            expected = " or ".join(t.__name__ if t else "None" for t in allowed)
            raise TypeError(
                f"TrainerConfig.{field.name} must be {_article(expected)} {expected}, "
                f"got {value!r} ({type(value).__name__})"
            )


def _has_type(value, allowed: tuple) -> bool:
    """Numbers by kind (numpy's too): an integer is also a float; a bool is neither."""
    if value is None:
        return None in allowed
    if isinstance(value, bool) or type(value).__name__ == "bool":  # numpy's bool too
        return bool in allowed
    if isinstance(value, numbers.Integral):
        return int in allowed or float in allowed
    if isinstance(value, numbers.Real):
        return float in allowed
    return str in allowed and isinstance(value, str)


def _is_zero_or_one(value) -> bool:
    """An integer (not a bool) equal to 0 or 1."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value in (0, 1)


def _article(name: str) -> str:
    return "an" if name[0] in "aeiou" else "a"


#: annotations of TrainerConfig fields whose values are checked, and the types they allow
_SIMPLE_TYPES = {
    "int": (int,),
    "float": (float,),
    "bool": (bool,),
    "str": (str,),
    "int | None": (int, None),
    "float | None": (float, None),
    "bool | None": (bool, None),
    "str | None": (str, None),
}
