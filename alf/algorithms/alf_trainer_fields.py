"""ALF's ``TrainerConfig`` fields that alf has no field of its own for.

ALF's confs set them, so ``TrainerConfig`` accepts them (default None: not set), and
``apply(config)`` says what each value set does here, naming the field:

- ``MAPPED``: turned into alf's equivalent (``num_summaries`` -> ``summary_interval``,
  ``num_evals`` -> ``eval_interval``, as ALF computes them);
- ``NO_EFFECT``: accepted with a warning that it has no effect in alf (summaries and
  housekeeping alf does not have or always does);
- ``REFUSED``: a value other than ALF's default changes what is trained (an ALF feature
  alf does not have): an error; ALF's default itself is accepted with the warning.

This module is torch-free (``alf.algorithms.config`` imports it).
"""

import logging

MAPPED = ("num_summaries", "num_evals")

NO_EFFECT = {
    "conf_file": "alf records the conf files itself (root_dir/config_files)",
    "async_eval": "alf evaluates synchronously, between training iterations",
    "code_snapshots": "alf stores its snapshot with --store_snapshot",
    "confirm_checkpoint_upon_crash": "alf writes a checkpoint when stopped by a signal",
    "ddp_paras_check_interval": "alf's data-parallel ranks check their parameters at start",
    "empty_cache": "alf does not empty the CUDA cache",
    "eval_uncertainty": "alf has no uncertainty evaluation",
    "mask_out_loss_for_last_step": "alf always masks out the loss of LAST steps",
    "metric_min_buffer_size": "alf's metrics average over the last episodes",
    "normalize_importance_weights_by_max": (
        "alf always divides prioritized-replay weights by the largest possible one "
        "(that of the smallest priority stored)"
    ),
    "profiling": "alf has no built-in profiler",
    "summarize_action_distributions": "alf writes no action-distribution summaries",
    "summarize_first_interval": "alf summarizes every summary_interval",
    "summarize_gradient_noise_scale": "alf writes no gradient-noise-scale summaries",
    "summarize_output": "alf writes no network-output summaries",
    "summary_max_queue": "alf's summary writer uses tensorboard's queue",
    "sync_progress_to_envs": "alf's environments get no training progress",
    "update_counter_every_mini_batch": "alf counts training iterations",
    "use_root_inputs_for_after_train_iter": "alf's after_train_iter gets the experience",
    "visualize_alf_tree": "alf draws no algorithm tree",
}
"""ALF field -> why it has no effect in alf."""

REFUSED = {
    "ml_type": ("rl", "alf trains reinforcement learning only"),
    "unroll_with_grad": (False, "alf unrolls without gradient"),
    "async_unroll": (False, "alf unrolls synchronously (see SamplerConfig for remote samplers)"),
    "max_unroll_length": (0, "alf has no asynchronous unroll"),
    "unroll_queue_size": (200, "alf has no asynchronous unroll"),
    "unroll_step_interval": (0, "alf has no asynchronous unroll"),
    "unroll_parameter_update_period": (10, "alf has no asynchronous unroll"),
    "offline_buffer_dir": (None, "alf has no offline (hybrid) RL"),
    "offline_buffer_length": (None, "alf has no offline (hybrid) RL"),
    "rl_train_after_update_steps": (0, "alf has no offline (hybrid) RL"),
    "rl_train_every_update_steps": (1, "alf has no offline (hybrid) RL"),
}
"""ALF field -> (ALF's default, what alf does instead)."""

FIELDS = sorted(MAPPED + tuple(NO_EFFECT) + tuple(REFUSED))
"""Every ALF-only field ``TrainerConfig`` accepts."""


def apply(config) -> dict[str, int]:
    """Map, warn about or refuse the ALF-only fields set on ``config`` (module doc); the
    warnings are logged. ``config`` is not changed.

    Returns:
        the values of alf's fields that the mapped fields set (e.g.
        ``{"summary_interval": 25}``); ``TrainerConfig`` takes them as it is built.

    Raises:
        ValueError: naming the field, for a refused value or a mapping without
            ``num_iterations``.
    """
    warnings, mapped = [], {}
    for name in FIELDS:
        value = getattr(config, name)
        if value is None:
            continue
        if name in MAPPED:
            mapped.update(_map(config, name, value))
            continue
        if name in REFUSED:
            default, instead = REFUSED[name]
            if value != default:
                raise ValueError(
                    f"TrainerConfig.{name}={value!r} is not supported by alf: {instead}"
                )
        reason = NO_EFFECT.get(name) or REFUSED[name][1]
        warnings.append(f"TrainerConfig.{name}={value!r} has no effect in alf: {reason}")
    for line in warnings:
        logging.warning("%s", line)
    return mapped


def _map(config, name: str, value) -> dict[str, int]:
    target = "summary_interval" if name == "num_summaries" else "eval_interval"
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"TrainerConfig.{name} must be a positive int, got {value!r}")
    if config.num_iterations <= 0:
        raise ValueError(
            f"TrainerConfig.{name} needs num_iterations > 0 (alf sets {target} = "
            f"num_iterations // {name}); set {target} instead"
        )
    interval = max(1, config.num_iterations // value)
    logging.info("TrainerConfig.%s=%d: %s = %d", name, value, target, interval)
    return {target: interval}
