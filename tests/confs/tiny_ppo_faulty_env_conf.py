"""``tiny_ppo_conf.py`` with a faulty env (``tests/environments/faulty_envs.py``), chosen by
``fault``:

* ``'hang'`` / ``'spin'``: the env hangs (sleeping / spinning in Python) on its
  ``fault_step``-th step; with ``fault_where='train'`` in the training envs, which run in
  this process (``nonparallel``, as in the example conf; no evaluation), with ``'eval'``
  only in the evaluation env (in this process; the training envs run in workers);
* ``'die'``: the training envs' worker processes die on every step from their
  ``fault_step``-th, with ``restart_on_crash`` and a budget of one restart (no evaluation);
* ``'slow_start'``: the evaluation env takes a minute to build (a start-up to interrupt).

``fault_marker``: a file created when the fault begins.
"""

import functools
import os

import alf
from alf.environments import suite_gym
from tests.environments.faulty_envs import DieAt, HangAt, SlowStart

alf.import_config("tiny_ppo_conf.py")
alf.define_config("fault", "hang")
alf.define_config("fault_where", "train")
alf.define_config("fault_step", 150)
alf.define_config("fault_marker", "")

fault = alf.get_config_value("fault")
step = alf.get_config_value("fault_step")
marker = alf.get_config_value("fault_marker") or None
trainer_pid = os.getpid()  # the envs of this process, not those of the workers

if fault in ("hang", "spin"):
    wrapper = functools.partial(
        HangAt, at=step, spin=fault == "spin", marker=marker, only_in_pid=trainer_pid
    )
    if alf.get_config_value("fault_where") == "train":
        alf.config("TrainerConfig", evaluate=False)
    else:
        alf.config("create_environment", nonparallel=False)
elif fault == "die":
    wrapper = functools.partial(DieAt, at=step)
    alf.config("create_environment", nonparallel=False, restart_on_crash=True, max_restarts=1)
    alf.config("TrainerConfig", evaluate=False)
elif fault == "slow_start":
    wrapper = functools.partial(SlowStart, seconds=60, marker=marker, only_in_pid=trainer_pid)
else:
    raise ValueError(f"unknown fault {fault!r}")

alf.config(
    "create_environment",
    env_load_fn=functools.partial(suite_gym.load, gym_env_wrappers=(wrapper,)),
)
