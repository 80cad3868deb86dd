"""``TrainerConfig``: the knobs of the training loop, with ALF's names and meanings."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import alf
from alf.algorithms import alf_trainer_fields
from alf.configuration import typecheck
from alf.configuration.argtypes import (
    Count,
    Flag,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    Probability,
)
from alf.configuration.registry import CLASS_ENTRIES

#: ``torch.set_float32_matmul_precision``'s values
MATMUL_PRECISIONS = ("highest", "high", "medium")
#: ``TrainerConfig.amp_dtype``'s values (None: float16 on CUDA, bfloat16 on the CPU)
AMP_DTYPES = ("bfloat16", "float16")


@alf.configurable
@dataclasses.dataclass(frozen=True)
class TrainerConfig:
    """Configuration of ``PolicyTrainer`` and of an RL algorithm's training iteration.

    It is frozen: what a run derives from it at run time (the seed drawn, per-rank batch
    sizes, the data transformers built) is kept elsewhere
    (``alf.trainers.run_state.RunState``, the algorithm), so the values read from it are
    the configured ones throughout the run.

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
            the first update (a whole number; ALF's confs write e.g. ``1e5``).
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
            ``alf/learners/trajectory_batching.py`` and docs/recurrent_ppo.md).
        whole_replay_buffer_training: replay learners (off-policy algorithms): train
            on the whole buffer, shuffled and split into minibatches, instead of
            sampling. None (default): as the algorithm's data regime has it —
            sampling for off-policy algorithms; PPO always trains on its whole
            (latest) unroll and refuses False. See ``alf/learners/__init__.py``.
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
        enable_amp: mixed-precision training (``alf.utils.mixed_precision``): the
            forward passes and the loss of each training update (``train_step`` and
            ``calc_loss``) run under ``torch.autocast``, so matrix products and
            convolutions compute in ``amp_dtype`` while parameters, gradients and
            optimizer state stay float32; the loss is taken back to float32 before its
            masked mean and ``backward``. Rollouts, evaluation and target computations
            outside ``train_step`` stay float32. With float16 a ``torch.amp.GradScaler``
            scales the loss (gradients are unscaled before clipping and the gradient-norm
            summaries, so both are in true units) and skips the updates whose gradients
            overflow, halving its scale; its state is in the checkpoints. A run's numbers
            differ from the float32 run's. On a CPU without bfloat16 arithmetic (before
            Intel Sapphire Rapids) the products are converted and usually slower.
        amp_dtype: the autocast dtype with ``enable_amp``: ``'bfloat16'`` or
            ``'float16'``; None (the default): float16 on CUDA, bfloat16 on the CPU.
            Ignored without ``enable_amp``.
        max_non_finite_updates_in_a_row: an update whose loss or gradient norm is
            NaN or inf is skipped (no optimizer step; counted in the summary
            ``loss/non_finite_updates_skipped`` and logged); this many skipped in a
            row stop the run with an error (the weights have diverged). With
            ``enable_amp`` in float16, an update the grad scaler skips counts only once
            its scale has fallen below 1 (before that, a smaller scale may fix it).
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
        record_unroll_hashes: append the hash of every iteration's unroll to
            ``root_dir/train/unroll_hashes.jsonl`` (``alf.trainers.unroll_record``;
            ``alf.bin.train --verify_record`` compares a re-run with it).

    ALF's other fields (``num_summaries``, ``num_evals``, ``summarize_gradient_noise_scale``,
    ...) are accepted: ``alf_trainer_fields`` maps each value set to alf's equivalent,
    warns that it has no effect, or refuses it, naming the field.
    """

    root_dir: str | None = None
    algorithm_ctor: Callable | None = None
    data_transformer_ctor: Any = None
    random_seed: int | None = None
    num_iterations: NonNegativeInt = 1000
    num_env_steps: NonNegativeInt = 0
    unroll_length: Count = 8
    use_rollout_state: Flag = False
    temporally_independent_train_step: Flag | None = None
    num_checkpoints: NonNegativeInt = 10
    keep_checkpoints: Count = 3
    checkpoint_interval: NonNegativeInt = 0
    save_checkpoint_for_best_eval: Flag = True
    evaluate: Flag = False
    eval_interval: Count = 10
    num_eval_episodes: Count = 10
    num_eval_environments: Count = 1
    epsilon_greedy: Probability = 0.0
    no_thread_env_for_conf: Flag = False
    summary_interval: Count = 10
    summaries_flush_secs: int = 1
    debug_summaries: Flag = False
    summarize_grads_and_vars: Flag = False
    progress_bar: Flag = True
    initial_collect_steps: NonNegativeFloat = 0  # an int; a float like 1e5 is made one
    num_prenormalization_steps: NonNegativeInt = 0
    num_updates_per_train_iter: Count = 4
    mini_batch_size: Count | None = None
    mini_batch_length: Count | None = None
    whole_replay_buffer_training: Flag | None = None
    trajectory_mini_batches: Flag = False
    clear_replay_buffer: Flag | None = None
    replay_buffer_length: Count = 1024
    priority_replay: Flag = False
    priority_replay_alpha: NonNegativeFloat = 0.7
    priority_replay_beta: NonNegativeFloat = 0.4
    priority_replay_eps: PositiveFloat = 1e-6
    checkpoint_replay_buffer: Flag = True
    num_threads: NonNegativeInt = 1
    flush_denormal: Flag = True
    keep_freed_memory: Flag = True
    matmul_precision: str = "highest"
    enable_amp: Flag = False
    amp_dtype: str | None = None
    max_non_finite_updates_in_a_row: Count = 10
    device: str | None = None
    init_from: str | None = None
    init_from_normalizers: Flag = True
    use_wandb: Flag = False
    wandb_project: str | None = None
    wandb_run_name: str | None = None
    record_unroll_hashes: Flag = True
    # ALF's fields that alf has no field for: mapped, warned or refused (alf_trainer_fields)
    async_eval: Any = None
    async_unroll: Any = None
    code_snapshots: Any = None
    conf_file: Any = None
    confirm_checkpoint_upon_crash: Any = None
    ddp_paras_check_interval: Any = None
    empty_cache: Any = None
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
        for name, value in alf_trainer_fields.apply(self).items():
            self._settle(name, value)
        self._check()

    def _settle(self, name: str, value) -> None:
        """Set field ``name`` while the config is built (the dataclass is frozen)."""
        object.__setattr__(self, name, value)

    def _check(self):
        self._check_types()
        steps = self.initial_collect_steps
        if not float(steps).is_integer():
            raise ValueError(
                f"TrainerConfig.initial_collect_steps={steps}: expected a whole number"
            )
        self._settle("initial_collect_steps", int(steps))
        if self.num_iterations <= 0 and self.num_env_steps <= 0:
            raise ValueError(
                "TrainerConfig needs a stopping rule: num_iterations > 0 or num_env_steps > 0"
            )
        if self.matmul_precision not in MATMUL_PRECISIONS:
            raise ValueError(
                f"TrainerConfig.matmul_precision must be one of {MATMUL_PRECISIONS}, "
                f"got {self.matmul_precision!r}"
            )
        if self.amp_dtype is not None and self.amp_dtype not in AMP_DTYPES:
            raise ValueError(
                f"TrainerConfig.amp_dtype must be one of {AMP_DTYPES} (or None: float16 on "
                f"CUDA, bfloat16 on the CPU), got {self.amp_dtype!r}"
            )

    def _check_types(self):
        """Each field's value must be what its annotation accepts, in its range
        (``alf.configuration.typecheck``, the check of every configured value): an error
        is one line naming the field, e.g. ``TrainerConfig.unroll_length=8.5: expected an
        int >= 1, got float``. A flag (``Flag``) set to the integer 0 or 1, as ALF's confs
        do, becomes False / True."""
        entry = CLASS_ENTRIES[TrainerConfig]
        for field in dataclasses.fields(self):
            hint = typecheck.accepted_hint(entry, field.name)
            value = getattr(self, field.name)
            typecheck.check_value(f"TrainerConfig.{field.name}", value, hint)
            if typecheck.is_flag(hint) and not isinstance(value, bool) and value is not None:
                self._settle(field.name, bool(value))  # ALF's confs write flags as 0 / 1
