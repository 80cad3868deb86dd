"""Conf files and command-line values: ``load_config``, ``import_config``,
``--conf_param`` and ``--gin_param``.

Internal module: use ``alf.config_util``. A Python conf file runs as a module named
``_alf_conf_<stem>``; a gin conf file is read by ``gin_reader.parse_gin``.
"""

import ast
import importlib.util
import os
import re
import sys

from absl import logging

from alf.configuration.binding import config1
from alf.configuration.gin_reader import parse_gin
from alf.configuration.registry import NAME_RE
from alf.configuration.typecheck import ConfigValueError

CONF_MODULE_PREFIX = "_alf_conf_"
"""Prefix of the module names that Python conf files run as."""

_CONFIG_PATH_ENV = "ALF_CONFIG_PATH"
_ALF_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_EXAMPLES_DIR = os.path.join(_ALF_DIR, "examples")

_LOADED_CONFS = set()  # real paths of conf files already executed
_CONF_FILES = []  # same, in loading order
_CONF_DIR_STACK = []  # directories of the conf files being executed


# --------------------------------------------------------------------------- conf files


def _search_dirs():
    current = _CONF_DIR_STACK[-1] if _CONF_DIR_STACK else os.getcwd()
    extra = [d for d in os.environ.get(_CONFIG_PATH_ENV, "").split(os.pathsep) if d]
    return [current, _EXAMPLES_DIR, *extra]


def _locate_conf(conf_file):
    conf_file = os.path.expanduser(os.fspath(conf_file))
    if os.path.isabs(conf_file):
        if os.path.isfile(conf_file):
            return os.path.realpath(conf_file)
        raise ValueError(f"Conf file '{conf_file}' does not exist.")
    dirs = _search_dirs()
    for directory in dirs:
        path = os.path.join(directory, conf_file)
        if os.path.isfile(path):
            return os.path.realpath(path)
    raise ValueError(f"Cannot find conf file '{conf_file}' (searched {dirs}).")


class ConfFileError(ValueError):
    """A conf file failed to run; the message is one line: ``file, line N: what``."""


def _exec_python_conf(path):
    stem = os.path.splitext(os.path.basename(path))[0]
    module_name = CONF_MODULE_PREFIX + re.sub(r"\W", "_", stem)
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except ConfFileError:
        raise  # from a conf file this one imported: it names that file
    except SyntaxError as e:
        raise ConfFileError(f"{e.filename}, line {e.lineno}: SyntaxError: {e.msg}") from e
    except ConfigValueError as e:  # its message names the value and what was expected
        raise ConfFileError(f"{path}, line {_line_in(path, e)}: {e}") from e
    except Exception as e:
        raise ConfFileError(f"{path}, line {_line_in(path, e)}: {_one_line(e)}") from e


def _line_in(path: str, error: BaseException) -> int | str:
    """The line of ``path`` that was running when ``error`` was raised (the last one)."""
    lines = [n for f, n in _walk(error.__traceback__) if f.f_code.co_filename == path]
    return lines[-1] if lines else "?"


def _walk(tb):
    while tb is not None:
        yield tb.tb_frame, tb.tb_lineno
        tb = tb.tb_next


def _one_line(error: BaseException) -> str:
    text = str(error).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


def _run_conf(path):
    if not path.endswith((".py", ".gin")):
        raise ValueError(f"Conf file '{path}' must end with '.py' or '.gin'.")
    _LOADED_CONFS.add(path)
    _CONF_FILES.append(path)
    _CONF_DIR_STACK.append(os.path.dirname(path))
    try:
        if path.endswith(".gin"):
            with open(path, encoding="utf-8") as source:
                parse_gin(source, path, mutable=True, include=import_config)
        else:
            _exec_python_conf(path)
    finally:
        _CONF_DIR_STACK.pop()


def load_config(conf_file):
    """Execute a conf file: a ``.py`` file (run as a module) or a ``.gin`` file.

    A relative path is looked up in the current directory (or the directory of the conf
    file being executed), then in ``alf/examples/``, then in the directories listed in the
    ``ALF_CONFIG_PATH`` environment variable (``os.pathsep``-separated).

    Args:
        conf_file (str): path of the conf file.
    """
    _run_conf(_locate_conf(conf_file))


def import_config(conf_file):
    """Execute another conf file from a conf file, at most once.

    Same search as ``load_config`` but relative paths start from the directory of the conf
    file that calls it. A file that was already loaded (since the last ``reset_configs``)
    is skipped. A gin ``include 'file'`` statement calls this function.

    Args:
        conf_file (str): path of the ``.py`` or ``.gin`` conf file.
    """
    path = _locate_conf(conf_file)
    if path in _LOADED_CONFS:
        logging.debug("Conf file '%s' is already loaded; skipped.", path)
        return
    _run_conf(path)


def get_loaded_conf_files():
    """Real paths of the conf files executed since the last reset, in loading order."""
    return list(_CONF_FILES)


def forget_loaded_conf_files():
    """Forget which conf files were executed (part of ``reset_configs``).

    The base confs of ``alf/examples`` imported as Python modules (ALF's ``from
    alf.examples import ppo_conf``) are dropped from ``sys.modules`` too, so that the
    next conf importing one runs it again instead of getting the cached module.
    """
    _LOADED_CONFS.clear()
    _CONF_FILES.clear()
    for name in [m for m in sys.modules if m.startswith("alf.examples.")]:
        del sys.modules[name]
        parent, _, child = name.rpartition(".")
        if hasattr(sys.modules.get(parent), child):  # else 'from parent import child'
            delattr(sys.modules[parent], child)  # would return the old module


# --------------------------------------------------------------------------- command line


def parse_conf_param(conf_param):
    """Parse one ``--conf_param`` string ``'Name.arg=value'``.

    Args:
        conf_param (str): the string; ``value`` must be a Python literal (strings quoted),
            and the name may also be a name defined with ``define_config``.

    Returns:
        tuple[str, Any]: the config name and the value.

    Raises:
        ValueError: naming ``conf_param`` if the ``=``, the name or the value is malformed.
    """
    name, sep, value_str = conf_param.partition("=")
    name = name.strip()
    if not sep:
        raise ValueError(f"conf_param {conf_param!r} has no '='; expected 'Name.arg=value'.")
    if not NAME_RE.fullmatch(name):
        raise ValueError(
            f"conf_param {conf_param!r} has an invalid name {name!r}; expected 'Name.arg' "
            "(dot-separated identifiers) or a name defined with alf.define_config."
        )
    try:
        value = ast.literal_eval(value_str.strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ValueError(
            f"conf_param {conf_param!r} has a value that is not a Python literal: "
            f"{value_str.strip()!r} (quote strings, e.g. Name.arg='\"text\"')."
        ) from None
    return name, value


def apply_conf_params(conf_params):
    """Apply ``--conf_param`` strings as immutable configs, so conf files cannot override
    them. They may name configurables that are not imported yet (they stay pending).

    Args:
        conf_params (Iterable[str]): strings ``'Name.arg=value'``.

    Returns:
        list[tuple[str, Any]]: the parsed (name, value) pairs.
    """
    parsed = [parse_conf_param(conf_param) for conf_param in conf_params]
    for name, value in parsed:
        config1(name, value, mutable=False)
    return parsed


def apply_gin_params(gin_params):
    """Apply ``--gin_param`` strings (gin binding syntax, e.g. ``'Name.arg = @Other'``) as
    immutable configs.

    Args:
        gin_params (Iterable[str]): gin statements, one per string.
    """
    gin_params = list(gin_params)
    if gin_params:
        source = "\n".join(gin_params) + "\n"
        parse_gin(source, "--gin_param", mutable=False, include=import_config)
