"""Small helpers shared across alf."""

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
