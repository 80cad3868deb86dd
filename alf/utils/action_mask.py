r"""Action masks: which of the discrete actions are legal at a step.

**Convention.** An environment whose legal actions change from step to step gives the
mask as a field of a dict observation, ``observation['action_mask']``: ``[num_actions]``,
bool or 0/1 (any dtype; nonzero is legal), as PettingZoo's and ALF's board-game
environments do. An environment that gives it in gymnasium's ``info['action_mask']``
instead (``Taxi-v4``) is wrapped with ``gym_wrappers.ActionMaskFromInfo``
(``suite_gym.load(..., gym_env_wrappers=(ActionMaskFromInfo,))``), which moves it into
the observation. Inside alf the mask is therefore always ``observation['action_mask']``,
an ordinary observation leaf: it is stored in replay buffers and unrolls, crosses process
and sampler boundaries and reaches ``predict_step`` like any other leaf.

**The networks never see it.** An algorithm that takes discrete actions splits the field
off the observation before its networks (``split_observation_spec`` when it builds them,
``split_observation`` at every step): the networks are built on, and read, the observation
without the mask; if one field remains (PettingZoo's ``{'observation', 'action_mask'}``),
they get that field itself, not a dict of one entry. The algorithm then applies the mask
to what the networks return:

- logits :math:`l_a` (a policy) become :math:`l_a` for legal :math:`a` and the dtype's
  most negative finite value for illegal ones (``mask_logits``), so that
  :math:`\pi(a|s) = \exp(l_a) / \sum_{b\ \mathrm{legal}} \exp(l_b)` is exactly 0 for an
  illegal action: torch's ``Categorical`` (``sample``, ``mode``, ``log_prob``,
  ``entropy``, the KL of two of them) is the distribution over the legal actions, the
  entropy :math:`-\sum_{a\ \mathrm{legal}} \pi(a) \log \pi(a)`; Gumbel-max and
  ``multinomial`` samplers never return an illegal action. (A finite value, not
  :math:`-\infty`: differences of masked logits stay finite, so no NaN reaches a
  gradient.)
- Q values (DQN, QR-DQN, SAC's critics) are masked the same way before the greedy
  :math:`\arg\max` and :math:`\max` (acting, and the target at the next state).
- a uniformly random action (epsilon-greedy, random initial collection) is uniform over
  the legal actions (``uniform_legal_action``).

**No legal action.** In ``rollout_step`` (training's acting), a row with no legal action
raises a one-line ``ValueError`` naming the algorithm and the field
(``legal_mask(..., name=)``), except at a LAST step, whose action the environment
ignores. Everywhere else (``predict_step``, training, a traced or compiled step) such a
row is treated as all legal, so that nothing becomes NaN: evaluation, ``alf.bin.play``
and an exported policy never fail on it (and the check, which reads the mask on the
host, is not in their graphs).
An observation with the field and a continuous (or non-scalar) action spec is a
``ValueError`` when the algorithm is built.
"""

from __future__ import annotations

import torch
import torch.distributions as td

from alf.data_structures import StepType
from alf.utils import dist_utils

#: the observation field holding the mask
ACTION_MASK_FIELD = "action_mask"


def has_action_mask(observation_spec) -> bool:
    """Whether the observation (spec) is a dict with an ``action_mask`` field."""
    return isinstance(observation_spec, dict) and ACTION_MASK_FIELD in observation_spec


def _without_mask(observation: dict):
    rest = {k: v for k, v in observation.items() if k != ACTION_MASK_FIELD}
    return next(iter(rest.values())) if len(rest) == 1 else rest


def split_observation_spec(observation_spec, action_spec, name: str):
    """``(spec the networks are built on, whether there is a mask)``.

    Raises ``ValueError`` if there is a mask but the action is not one discrete scalar, or
    the mask's length is not the number of actions."""
    if not has_action_mask(observation_spec):
        return observation_spec, False
    mask_spec = observation_spec[ACTION_MASK_FIELD]
    if not getattr(action_spec, "is_discrete", False) or action_spec.shape != ():
        raise ValueError(
            f"{name}: observation['{ACTION_MASK_FIELD}'] masks discrete actions, but the "
            f"action spec is {action_spec}"
        )
    num_actions = int(action_spec.maximum) - int(action_spec.minimum) + 1
    if tuple(mask_spec.shape) != (num_actions,):
        raise ValueError(
            f"{name}: observation['{ACTION_MASK_FIELD}'] must have shape ({num_actions},) "
            f"(one entry per action), got {tuple(mask_spec.shape)}"
        )
    return _without_mask(observation_spec), True


def split_observation(observation):
    """``(observation the networks read, mask [..., num_actions] or None)`` (the mask as
    given; ``legal_mask`` makes it bool)."""
    if not has_action_mask(observation):
        return observation, None
    return _without_mask(observation), observation[ACTION_MASK_FIELD]


def legal_mask(mask: torch.Tensor | None, step_type=None, name: str | None = None):
    """The bool mask ``[..., num_actions]`` (None: None); a row with no legal action becomes
    all legal.

    With ``name`` (acting), such a row is a ``ValueError`` unless its ``step_type`` is
    LAST (the environment ignores that action). This reads the mask on the host."""
    if mask is None:
        return None
    mask = mask if mask.dtype == torch.bool else mask != 0
    none_legal = ~mask.any(-1, keepdim=True)
    if name is not None and not torch.compiler.is_compiling() and not torch.jit.is_tracing():
        bad = none_legal.squeeze(-1)
        if step_type is not None:
            bad = bad & (step_type != StepType.LAST)
        if bool(bad.any()):
            rows = bad.nonzero().flatten().tolist()
            raise ValueError(
                f"{name}: observation['{ACTION_MASK_FIELD}'] has no legal action in row(s) {rows}"
            )
    return mask | none_legal


def mask_logits(logits: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """``logits`` ``[..., n]`` with the illegal entries (``mask`` false) set to the dtype's
    most negative finite value (``mask`` None: unchanged)."""
    if mask is None:
        return logits
    return logits.masked_fill(~mask, torch.finfo(logits.dtype).min)


def mask_distribution(dist: td.Distribution, mask: torch.Tensor | None) -> td.Distribution:
    """The categorical ``dist`` restricted to the legal actions (``mask`` None: ``dist``)."""
    if mask is None:
        return dist
    logits = mask_logits(dist.logits, mask)
    if isinstance(dist, dist_utils.ShiftedCategorical):
        return dist_utils.ShiftedCategorical(logits=logits, minimum=dist.minimum)
    if isinstance(dist, dist_utils.Categorical):
        return dist_utils.Categorical(logits=logits)
    if isinstance(dist, td.Categorical):
        return td.Categorical(logits=logits, validate_args=False)
    raise ValueError(f"action masks apply to categorical policies, got {type(dist).__name__}")


def uniform_legal_action(mask: torch.Tensor, action_spec=None) -> torch.Tensor:
    """Action indices ``[B]`` drawn uniformly among the legal ones of ``mask`` ``[B, n]``
    (bool, every row with a legal action); with ``action_spec``, the actions themselves
    (index + the spec's minimum, in its dtype)."""
    index = torch.multinomial(mask.to(torch.float32), 1).squeeze(-1)
    if action_spec is None:
        return index
    return (index + int(action_spec.minimum)).to(action_spec.dtype)


def split_time_step(inputs, name: str | None = None):
    """``(observation without the mask, bool mask [B, n] or None)`` of a ``TimeStep``;
    ``name``: the step is acted on, so a non-LAST row without a legal action is an
    error (``legal_mask``)."""
    observation, mask = split_observation(inputs.observation)
    if mask is not None:
        mask = legal_mask(mask, inputs.step_type, name)
    return observation, mask
