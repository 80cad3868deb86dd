"""PBT on CartPole-v1 where the members train on a shaped reward but are ranked by the
true objective.

``pbt_ppo_cart_pole_conf.py`` with CartPole wrapped in
``alf.environments.true_objective.TrueObjective``: the agent is paid
``1 - 0.5 * |x| / 2.4`` a step (``cart_position_penalty``: stay near the centre), while
``env_info['true_objective']`` counts the steps survived, 1 a step. ``EpisodeMetrics``
averages it at each episode's end (``AverageEnvInfo/true_objective``: the mean raw
CartPole return, i.e. the mean episode length), and since the env reports it,
``PBTConfig.objective`` defaults to it: members are compared by how long they keep the
pole up, not by the shaped ``AverageReturn``::

    python -m alf.bin.pbt_launch --conf alf/examples/pbt_ppo_cart_pole_true_objective_conf.py \\
        --workspace runs/pbt_cart_pole_true_objective --num_policies 4 --max_parallel 2
"""

import functools

import alf
from alf.environments import suite_gym
from alf.environments.true_objective import TrueObjective, cart_position_penalty

alf.import_config("pbt_ppo_cart_pole_conf.py")

alf.config(
    "create_environment",
    env_load_fn=functools.partial(
        suite_gym.load,
        gym_env_wrappers=(functools.partial(TrueObjective, reward_shaping=cart_position_penalty),),
    ),
)
