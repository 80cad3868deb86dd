"""Small helpers shared across alf."""

import alf
from alf import config_util

_PARSED = {}  # the arguments of the last parse_conf_file call


def parse_conf_file(conf_file, conf_params=(), gin_params=()):
    """Load an experiment's configuration into alf's registry.

    Order: the command-line values first (immutable, so the conf file cannot override
    them; they stay pending until their configurables are imported), then the conf file,
    then a check that every configured name found its target.

    Args:
        conf_file (str): a ``.py`` or ``.gin`` conf file.
        conf_params (Iterable[str]): ``--conf_param`` strings ``'Name.arg=value'``.
        gin_params (Iterable[str]): ``--gin_param`` strings in gin binding syntax.

    Raises:
        ValueError: on a malformed parameter, a missing conf file, or a configured name
            that matches no configurable once the conf file has run.
    """
    conf_params, gin_params = list(conf_params), list(gin_params)
    config_util.apply_conf_params(conf_params)
    config_util.apply_gin_params(gin_params)
    loaded_before = len(config_util.get_loaded_conf_files())
    config_util.load_config(conf_file)
    config_util.validate_pending_configs()
    located = config_util.get_loaded_conf_files()[loaded_before]
    _PARSED["args"] = (located, conf_params, gin_params)


def parsed_conf_args():
    """``(conf_file, conf_params, gin_params)`` of the last ``parse_conf_file`` call (None
    before any, or when the configuration was reset since): what another process needs
    to load the same configuration (the remote samplers of ``alf.samplers`` do)."""
    args = _PARSED.get("args")
    if args is None or args[0] not in config_util.get_loaded_conf_files():
        return None
    return args


# -- the specs of the environment an algorithm is being built for (ALF's helpers) --------

_ENV_SPECS = {}


def set_global_env_specs(raw_observation_spec, observation_spec, action_spec, reward_spec) -> None:
    """Record the specs of the environment the algorithm is about to be built for
    (``create_algorithm`` does, before it builds it): what ``get_observation_spec`` and
    its kin return, so that a conf can say ``@get_observation_spec()`` as ALF's do."""
    _ENV_SPECS.update(
        raw_observation=raw_observation_spec,
        observation=observation_spec,
        action=action_spec,
        reward=reward_spec,
    )


def _env_spec(which: str, caller: str):
    if which not in _ENV_SPECS:
        raise ValueError(
            f"{caller}() is only known once the environment exists: call it where the "
            "algorithm is built (e.g. as a gin reference '@{caller}()' of an argument)"
        )
    return _ENV_SPECS[which]


def _field(specs, field: str | None):
    for name in field.split(".") if field else ():
        specs = specs[name]
    return specs


@alf.configurable
def get_raw_observation_spec(field: str | None = None):
    """The environment's observation spec (before the data transformers); ``field``: a
    path ``"a.b"`` into a nested spec."""
    return _field(_env_spec("raw_observation", "get_raw_observation_spec"), field)


@alf.configurable
def get_observation_spec(field: str | None = None):
    """The observation spec the algorithm sees (after the data transformers of
    ``TrainerConfig.data_transformer_ctor``); ``field``: a path ``"a.b"`` into it."""
    return _field(_env_spec("observation", "get_observation_spec"), field)


@alf.configurable
def get_action_spec():
    """The environment's action spec."""
    return _env_spec("action", "get_action_spec")


@alf.configurable
def get_reward_spec():
    """The environment's reward spec."""
    return _env_spec("reward", "get_reward_spec")
