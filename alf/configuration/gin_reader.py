"""Reading gin statements (a ``.gin`` file or ``--gin_param`` strings) into alf's registry.

Internal module: use ``alf.config_util``. Only gin-config's parser is used: a binding
``Name.arg = value`` becomes ``config1('Name.arg', value)``, a binding ``NAME = value``
sets the gin macro (or defined config) ``NAME``, ``@Name`` / ``@Name()`` / ``%NAME`` become
the lazy values of ``registry``, ``import`` statements import the module, and
``include`` statements are handed to the caller's ``include`` function. A scoped binding
``scope/Name.arg = value`` applies to the calls made through ``@scope/Name`` only (see
``scopes``); a scoped macro (``scope/NAME = value``, ``%scope/NAME``) is, as in gin, the
macro of that whole name. gin is imported only when a gin statement is parsed.
"""

import importlib

from alf.configuration.binding import apply_pending_to_name, assign, config1, config_scoped
from alf.configuration.registry import MACROS, ConfigurableRef, MacroRef, Slot, named_slot


class _GinDelegate:
    """Builds the values of gin references and macros for gin's ``ConfigParser``."""

    def configurable_reference(self, scoped_name, evaluate):
        scope, _, name = scoped_name.rpartition("/")
        return ConfigurableRef(name, evaluate, scope or None)

    def macro(self, scoped_name):
        # a scoped macro (%scope/NAME) is, as in gin, the macro of that whole name
        return MacroRef(scoped_name)


def _gin_import(module, is_from):
    """Import ``module``; for ``from a.b import c`` (``module`` 'a.b.c') where ``c`` is not
    a module, import ``a.b``. An ``ImportError`` raised inside the module is reported."""
    try:
        importlib.import_module(module)
    except ImportError as error:
        parent = module.rpartition(".")[0]
        not_a_module = isinstance(error, ModuleNotFoundError) and error.name == module
        if not (is_from and parent and not_a_module):
            raise ValueError(f"Cannot import '{module}': {error}") from None
        _gin_import(parent, is_from=False)


def _gin_binding(statement, mutable):
    if statement.scope and not statement.arg_name:  # a scoped macro: 'scope/NAME = value'
        _set_macro(f"{statement.scope}/{statement.selector}", statement.value, mutable)
    elif statement.scope:
        name = f"{statement.selector}.{statement.arg_name}"
        config_scoped(
            statement.scope,
            name if statement.arg_name else statement.selector,
            statement.value,
            mutable,
        )
    elif statement.arg_name:
        config1(f"{statement.selector}.{statement.arg_name}", statement.value, mutable)
    else:
        _set_macro(statement.selector, statement.value, mutable)


def _set_macro(name, value, mutable):
    """Bind gin macro ``name`` (the defined config ``name`` if there is one); a value set
    earlier with ``config1(name, ...)`` (e.g. an immutable ``--conf_param``) is applied
    first."""
    slot = named_slot(name)
    if slot is None:
        slot = MACROS[name] = Slot()
        apply_pending_to_name(name)
    assign(slot, "%" + name, value, mutable, True)


def _apply_gin_statement(statement, config_parser, mutable, include):
    if isinstance(statement, config_parser.BindingStatement):
        _gin_binding(statement, mutable)
    elif isinstance(statement, config_parser.ImportStatement):
        _gin_import(statement.module, statement.is_from)
    elif isinstance(statement, config_parser.IncludeStatement):
        include(statement.filename)
    # A BlockDeclaration is followed by the BindingStatements of its block.


def parse_gin(source, origin, mutable, include):
    """Read gin statements into alf's registry.

    Args:
        source (str|IO[str]): gin text, or a file object to read it from.
        origin (str): where the text comes from, for error messages.
        mutable (bool): passed to ``config1`` for every binding.
        include (Callable[[str], None]): runs the file named by an ``include`` statement.

    Raises:
        ValueError: naming ``origin`` (and the line) on a syntax error or a bad binding.
    """
    from gin import config_parser  # imported here: gin is only needed for gin confs

    parser = config_parser.ConfigParser(source, _GinDelegate())
    while True:
        try:
            statement = parser.parse_statement()
        except (SyntaxError, ValueError) as error:
            raise ValueError(f"Cannot parse gin config {origin}: {error}") from None
        if statement is None:
            return
        try:
            _apply_gin_statement(statement, config_parser, mutable, include)
        except ValueError as error:
            line = statement.location.line_num
            raise ValueError(f"{origin}, line {line}: {error}") from None
