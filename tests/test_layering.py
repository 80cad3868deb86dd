"""alf's import layering: no import circle, and no import that runs up a layer.

Every module under ``alf/`` is read with ``ast`` (nothing is imported) and its
dependencies on other alf modules collected:

- ``import`` / ``from ... import`` statements at module level, **and inside functions**:
  a function-level import is a dependency all the same (it runs whenever the function
  does); making an import lazy hides a circle from Python's import machinery, not from
  the design. Only imports under ``if TYPE_CHECKING:`` are skipped (they never run);
- importing ``alf.a.b.c`` runs ``alf/a/__init__.py`` and ``alf/a/b/__init__.py`` first:
  an edge to each of those packages (except the importer's own packages);
- a name a package exports lazily (``alf.utils.lazy_exports``: ``from alf.algorithms
  import PPOAlgorithm``) is an edge to the module it comes from;
- attribute access through the root package's lazy ``__getattr__`` (``alf.summary.scalar``
  after a bare ``import alf``, ``alf.math`` for ``alf.utils.math_ops``) is an edge too.

``LAYERS`` places every module: the longest matching prefix gives its layer (the root
package ``alf`` itself, the configuration API, only matches exactly). An import may go to
the same layer or a lower one; an import circle is an error in any layer, between
modules and between the units of ``LAYERS`` (the modules sharing a prefix). Moving a
module to another package means editing this table; ``python tests/test_layering.py``
prints the graph of the units with their layers and the circles found (module-level
imports alone, and with function-level ones).
"""

from __future__ import annotations

import ast
import functools
import os
import sys
from collections import defaultdict
from typing import NamedTuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: prefix (a package or a module) -> layer; lower layers never import higher ones
LAYERS = {
    # 0: foundations: nests, specs, the data structures, the configuration system
    "alf": 0,  # the root package (the configuration API): matches itself only
    "alf.nest": 0,
    "alf.tensor_specs": 0,
    "alf.data_structures": 0,
    "alf.configuration": 0,
    "alf.config_util": 0,
    # 1: shared utilities, summaries, metrics, the collectives of data-parallel ranks
    "alf.utils": 1,
    "alf.summary": 1,
    "alf.metrics": 1,
    "alf.initializers": 1,
    "alf.nest.utils": 1,  # ALF's combiners: torch modules over nests and specs
    "alf.parallel": 1,
    # 2: building blocks of algorithms
    "alf.layers": 2,  # ALF's layer language (networks are built of it)
    "alf.networks": 2,
    "alf.optimizers": 2,
    "alf.experience_replayers": 2,
    # 3: environments
    "alf.environments": 3,
    # 4: data transformers
    "alf.data_transformers": 4,
    # 5: the actor/learner machinery: acting (the Actor contract, the Unroller), learners
    "alf.learners": 5,
    # 6: the Algorithm base, TrainerConfig, RL algorithms, their losses, the factory (and
    #    the old paths of what moved to layers 4 and 5)
    "alf.algorithms": 6,
    # 7: policy export (reads a trained policy's data transformers); remote samplers
    "alf.export": 7,
    "alf.utils.policy_export": 7,  # old path of alf.export.policy_export
    "alf.utils.export_formats": 7,  # old path of alf.export.export_formats
    "alf.samplers": 7,
    # 8: population-based training, the trainer side (a member runs in the trainer's loop)
    "alf.pbt": 8,
    # 9: the trainer
    "alf.trainers": 9,
    # 10: tuning launchers (grid search, the PBT launcher): they run trainings as processes
    "alf.tuning": 10,
    "alf.utils.grid_search": 10,  # old path of alf.tuning.grid_search
    "alf.pbt.launcher": 10,  # old path of alf.tuning.pbt.launcher
    "alf.pbt.status": 10,  # old path of alf.tuning.pbt.status
    # 11: command lines and example confs (nothing imports them)
    "alf.bin": 11,
    "alf.examples": 11,
}


# -- the graph ---------------------------------------------------------------------------


def _modules(root: str) -> dict[str, str]:
    """Module name -> file of every module under ``root/alf``."""
    found = {}
    for directory, _, files in os.walk(os.path.join(root, "alf")):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                module = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                found[module.removesuffix(".__init__")] = path
    return found


def _literal_assignment(tree: ast.Module, name: str):
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            try:
                return ast.literal_eval(node.value)
            except ValueError:
                return None
    return None


class _Resolver:
    """Dotted names -> the alf module they come from."""

    def __init__(self, modules: dict[str, str], read: dict[str, _Read]):
        self.modules = modules
        self.lazy = {}  # package -> {exported name: module}
        for module, summary in read.items():
            exports = summary.exports or {}
            self.lazy[module] = {n: f"{module}.{m}" for m, ns in exports.items() for n in ns}
        aliases = read["alf"].aliases if "alf" in read else None
        self.aliases = {f"alf.{k}": v for k, v in (aliases or {}).items()}

    def resolve(self, dotted: str) -> str | None:
        for alias, target in self.aliases.items():
            if dotted == alias or dotted.startswith(alias + "."):
                dotted = target + dotted[len(alias) :]
        if dotted in self.modules:
            return dotted
        package, _, name = dotted.rpartition(".")
        if name in self.lazy.get(package, {}):
            return self.lazy[package][name]
        while dotted and dotted not in self.modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None


def _is_type_checking(node: ast.If) -> bool:
    return "TYPE_CHECKING" in ast.unparse(node.test)


def _attribute_chain(node: ast.Attribute) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id == "alf":
        return ".".join(["alf"] + parts[::-1])
    return None


def _imported_names(node, module: str, is_package: bool) -> list[str]:
    """The dotted names an import statement refers to (``alf`` ones only)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "alf"]
    base = node.module or ""
    if node.level:
        parts = module.split(".") if is_package else module.split(".")[:-1]
        parts = parts[: len(parts) - (node.level - 1)]
        base = ".".join(parts + ([node.module] if node.module else []))
    if base.split(".")[0] != "alf":
        return []
    return [f"{base}.{a.name}" for a in node.names]


def _references(tree: ast.Module, module: str, is_package: bool):
    """``(dotted name, at module level)`` of every alf import and ``alf.x`` attribute."""
    found = []

    def visit(node, top: bool):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit(other, top)
                continue
            inner = top and not isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
            )
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.extend((name, top) for name in _imported_names(child, module, is_package))
                continue
            chain = _attribute_chain(child) if isinstance(child, ast.Attribute) else None
            if chain is not None:  # the whole chain: alf.x.y.z
                found.append((chain, top))
                continue
            visit(child, inner)

    visit(tree, True)
    return found


class _Read(NamedTuple):
    """What the graph needs of one module's source."""

    references: tuple  # (dotted name, at module level)
    exports: dict | None  # a package's lazy ``_EXPORTS``
    aliases: dict | None  # the root package's ``_SUBMODULE_ALIASES``


@functools.cache
def _read(module: str, source: str, is_package: bool) -> _Read:
    tree = ast.parse(source)
    return _Read(
        tuple(_references(tree, module, is_package)),
        _literal_assignment(tree, "_EXPORTS"),
        _literal_assignment(tree, "_SUBMODULE_ALIASES"),
    )


def import_graph(root: str = ROOT, planted: dict[str, str] | None = None):
    """``(module-level edges, all edges)``: module -> set of alf modules it depends on.

    Args:
        root: the repository root.
        planted: module -> extra source appended to it (the self-test plants violations).
    """
    modules = _modules(root)
    read = {}
    for module, path in modules.items():
        with open(path, encoding="utf-8") as f:
            source = f.read()
        if planted and module in planted:
            source += "\n" + planted[module]
        read[module] = _read(module, source, path.endswith("__init__.py"))
    resolver = _Resolver(modules, read)
    top_level, every = defaultdict(set), defaultdict(set)
    for module, summary in read.items():
        own = {module} | {module.rsplit(".", i)[0] for i in range(1, module.count(".") + 1)}
        for dotted, top in summary.references:
            target = resolver.resolve(dotted)
            if target is None:
                continue
            parts = target.split(".")
            targets = {target} | {".".join(parts[:i]) for i in range(2, len(parts))}
            for t in targets - own:
                every[module].add(t)
                if top:
                    top_level[module].add(t)
    return top_level, every


# -- the checks --------------------------------------------------------------------------


def unit_of(module: str) -> str | None:
    """The ``LAYERS`` prefix placing ``module`` (None: not placed)."""
    if module == "alf":
        return "alf"
    matches = [p for p in LAYERS if p != "alf" and (module == p or module.startswith(p + "."))]
    return max(matches, key=len) if matches else None


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    nodes = sorted(set(graph) | {t for ts in graph.values() for t in ts})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def unit_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    units = defaultdict(set)
    for module, targets in graph.items():
        for target in targets:
            if unit_of(module) != unit_of(target):
                units[unit_of(module)].add(unit_of(target))
    return units


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """``'a (layer i) imports b (layer j > i)'`` for every import up a layer."""
    found = []
    for module in sorted(graph):
        for target in sorted(graph[module]):
            low, high = LAYERS[unit_of(module)], LAYERS[unit_of(target)]
            if high > low:
                found.append(f"{module} (layer {low}) imports {target} (layer {high})")
    return found


def problems(graph: dict[str, set[str]]) -> list[str]:
    """Everything wrong with ``graph``: circles (modules, units) and upward imports."""
    found = [f"import circle: {' <-> '.join(c)}" for c in circles(graph)]
    found += [f"import circle between units: {' <-> '.join(c)}" for c in circles(unit_graph(graph))]
    return found + upward_imports(graph)


# -- the tests ---------------------------------------------------------------------------


def test_every_module_is_placed_in_a_layer():
    unplaced = [m for m in _modules(ROOT) if unit_of(m) in (None, "alf") and m != "alf"]
    assert not unplaced, f"add these modules (or their package) to LAYERS: {unplaced}"


def test_no_import_circle_and_no_import_up_a_layer():
    top_level, every = import_graph()
    assert sum(len(t) for t in every.values()) > 500  # the graph was read
    for graph in (top_level, every):
        found = problems(graph)
        assert not found, "\n".join(found)


def test_the_checks_catch_a_planted_circle_and_an_upward_import():
    # a utility importing the trainer: up from layer 1 to 9, and a circle through
    # policy_trainer -> seeding; a function-level import counts as much as a top-level one
    plant = {
        "alf.utils.seeding": "def f():\n    from alf.trainers.policy_trainer import PolicyTrainer\n"
    }
    top_level, every = import_graph(planted=plant)
    assert not problems(top_level)
    found = problems(every)
    assert "alf.utils.seeding (layer 1) imports alf.trainers.policy_trainer (layer 9)" in found
    assert any(p.startswith("import circle: ") and "alf.utils.seeding" in p for p in found)
    assert any("between units" in p and "alf.trainers" in p for p in found)
    # an edge hidden behind a lazy export or the root package's __getattr__ counts too
    lazy = {"alf.environments.alf_environment": "import alf\nalf.algorithms.PPOAlgorithm\n"}
    found = problems(import_graph(planted=lazy)[0])
    assert (
        "alf.environments.alf_environment (layer 3) imports alf.algorithms.ppo_algorithm "
        "(layer 6)" in found
    )
    # same layer, both ways: a circle without any upward import
    circle = {"alf.utils.finite": "import alf.utils.checkpoint_utils\n"}
    found = problems(import_graph(planted=circle)[0])
    assert found and all(p.startswith("import circle: ") for p in found)


def _print_graph() -> None:
    top_level, every = import_graph()
    for name, graph in (("module-level imports", top_level), ("all imports", every)):
        print(f"== {name}: module circles {circles(graph)}")
        print(f"   unit circles {circles(unit_graph(graph))}")
        print(f"   upward imports {upward_imports(graph)}")
    print("== units (layer) -> units imported (all imports)")
    units = unit_graph(every)
    for unit in sorted(LAYERS, key=lambda u: (LAYERS[u], u)):
        targets = ", ".join(f"{t} ({LAYERS[t]})" for t in sorted(units.get(unit, ())))
        print(f"  {unit} ({LAYERS[unit]}) -> {targets}")


if __name__ == "__main__":
    sys.exit(_print_graph())
