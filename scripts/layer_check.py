"""Check the package layers: import cycles, private names imported across modules, and stage
dependencies that dvc.yaml does not declare.

A static walk of the source (``ast``): every ``import`` and ``from ... import`` counts, also the
ones inside functions (they run when the function does, and a stage that calls the function
depends on the module). Imports under ``if TYPE_CHECKING:`` never run and do not count;
``importlib.import_module(f"pkg.{name}")`` counts as importing every module of ``pkg``. A stage's
deps must cover every module it loads except inert ones (a docstring and dunder names only: a
package's ``__init__``).

    python scripts/layer_check.py            # the figures, one line each, then the details
    python scripts/layer_check.py --repo DIR # another checkout

tests/test_stage_deps.py runs the same checks and fails on any cycle, any cross-module private
import and any undeclared stage import.
"""

from __future__ import annotations

import argparse
import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
PACKAGES = {"evalpipe": "src/evalpipe", "stages": "stages"}


# The layers, bottom first (docs/architecture.md): a module may import its own layer and the ones
# below. A module belongs to the longest prefix that names it.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "settings",
        (
            "evalpipe",
            "evalpipe.errors",
            "evalpipe.registries",
            "evalpipe.arms",
            "evalpipe.atomic",
            "evalpipe.languages",
            "evalpipe.paths",
            "evalpipe.seeding",
            "evalpipe.params",
            "evalpipe.params_schema",
            "evalpipe.model_list",
            "evalpipe.commands",
        ),
    ),
    ("answers", ("evalpipe.answers",)),
    ("words", ("evalpipe.words",)),
    ("perturb", ("evalpipe.perturb",)),
    ("defences", ("evalpipe.defences",)),
    ("benchmarks", ("evalpipe.benchmarks",)),
    ("inference", ("evalpipe.inference",)),
    ("scoring", ("evalpipe.scoring",)),
    ("annotation", ("evalpipe.annotation",)),
    ("sycophancy", ("evalpipe.sycophancy",)),
    ("report", ("evalpipe.report",)),
    ("cli", ("evalpipe.cli",)),
    ("stages", ("stages",)),
)


# A study (evalpipe.studies.<name>) is one package whose modules each serve one stage: a module
# named after the stage sits in that stage's layer (the stages' lists of studies too, e.g.
# evalpipe.studies.generate), so generate depends on the generation parts only.
STUDY_PARTS = {"generate": "inference", "score": "scoring", "impact": "scoring", "report": "report"}


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of ``module``'s layer."""
    if module.startswith("evalpipe.studies"):
        part = STUDY_PARTS.get(module.rsplit(".", 1)[-1], "settings")
        return next(i for i, (name, _) in enumerate(LAYERS) if name == part)
    best, level = -1, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, level = len(prefix), i
    if level < 0:
        raise ValueError(f"{module}: in no layer of LAYERS (scripts/layer_check.py)")
    return level


@dataclass(frozen=True)
class Import:
    """One import statement's effect: ``target`` is the module it loads (a submodule when the
    imported name is one, else the module named after ``from``); ``names`` the names taken."""

    importer: str
    target: str
    names: tuple[str, ...]
    line: int
    in_function: bool


def module_files(repo: Path = REPO) -> dict[str, Path]:
    """Every module of the project's packages: ``{dotted name: file}`` (a package is its
    ``__init__.py``)."""
    found: dict[str, Path] = {}
    for package, folder in PACKAGES.items():
        base = repo / folder
        for path in sorted(base.rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([package, *parts])] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, in_function: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                yield other, in_function
                yield from _walk(other, in_function)
            continue
        inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
        yield child, in_function
        yield from _walk(child, inner)


def _resolve_from(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _dynamic_prefix(call: ast.Call) -> str | None:
    func = call.func
    named = (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id == "import_module"
    )
    if not named or not call.args:
        return None
    arg = call.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values:
        first = arg.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value
    return None


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> list[Import]:
    """The project modules that ``module`` imports (third-party imports are left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found: list[Import] = []
    for node, in_function in _walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    found.append(Import(module, alias.name, (), node.lineno, in_function))
        elif isinstance(node, ast.ImportFrom):
            source = _resolve_from(module, is_package, node)
            if source not in modules:
                continue
            plain: list[str] = []
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                if sub in modules:
                    found.append(Import(module, sub, (), node.lineno, in_function))
                else:
                    plain.append(alias.name)
            if plain or not node.names:
                found.append(Import(module, source, tuple(plain), node.lineno, in_function))
        elif isinstance(node, ast.Call):
            prefix = _dynamic_prefix(node)
            if prefix is None:
                continue
            for other in modules:
                if other != module and other.startswith(prefix):
                    found.append(Import(module, other, (), node.lineno, in_function))
    return found


def import_graph(repo: Path = REPO) -> tuple[dict[str, Path], list[Import]]:
    modules = module_files(repo)
    edges = [imp for name, path in modules.items() for imp in imports_of(name, path, modules)]
    return modules, edges


def cycles(edges: list[Import]) -> list[list[str]]:
    """The import cycles: strongly connected groups of two or more modules (Tarjan), each sorted,
    plus a module that imports itself. A package ``__init__`` that imports its own submodules is
    not a cycle by itself: a submodule's import of its package is not an edge here unless it
    names the package in ``from pkg import name``."""
    graph: dict[str, set[str]] = {}
    for imp in edges:
        graph.setdefault(imp.importer, set()).add(imp.target)
        graph.setdefault(imp.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1 or node in graph[node]:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def cycle_edges(edges: list[Import]) -> list[Import]:
    """The imports that lie on a cycle (both ends in the same strongly connected group)."""
    group_of = {m: i for i, group in enumerate(cycles(edges)) for m in group}
    return [
        imp
        for imp in edges
        if imp.importer in group_of and group_of[imp.importer] == group_of.get(imp.target)
    ]


def private_imports(edges: list[Import]) -> list[tuple[Import, str]]:
    """``from other import _name``: a private name taken from another module."""
    return [
        (imp, name)
        for imp in edges
        if imp.target != imp.importer
        for name in imp.names
        if name.startswith("_") and not name.startswith("__")
    ]


def upward_imports(edges: list[Import]) -> list[Import]:
    """Imports of a module in a higher layer than the importer's."""
    return [imp for imp in edges if layer_of(imp.target) > layer_of(imp.importer)]


def closure(start: str, edges: list[Import]) -> set[str]:
    """Every project module that importing ``start`` (and calling its functions) may load,
    ``start`` included: imported modules, their packages' ``__init__`` and so on."""
    out: dict[str, set[str]] = {}
    for imp in edges:
        out.setdefault(imp.importer, set()).add(imp.target)
    seen: set[str] = set()
    todo = [start]
    while todo:
        mod = todo.pop()
        if mod in seen:
            continue
        seen.add(mod)
        parts = mod.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
        todo.extend(out.get(mod, ()))
    return seen


def stage_commands(repo: Path = REPO) -> dict[str, tuple[str, list[str]]]:
    """``{stage name: (module run by its cmd, deps)}`` from dvc.yaml; a ``foreach`` stage is listed
    once per item of its params.yaml list (``name@item``), deps with the item filled in."""
    dvc = yaml.safe_load((repo / "dvc.yaml").read_text(encoding="utf-8"))
    params = yaml.safe_load((repo / "params.yaml").read_text(encoding="utf-8"))
    stages: dict[str, tuple[str, list[str]]] = {}
    for name, stage in dvc["stages"].items():
        if "foreach" in stage:
            items = stage["foreach"]
            if isinstance(items, str):
                value: object = params
                for key in items.strip("${}").split("."):
                    value = value[key]  # type: ignore[index]
                items = value
            pairs = items.items() if isinstance(items, dict) else ((i, i) for i in items)
            for key, item in pairs:
                body = stage["do"]

                def fill(text: str, key: object = key, item: object = item) -> str:
                    return text.replace("${key}", str(key)).replace("${item}", str(item))

                stages[f"{name}@{key}"] = (
                    _cmd_module(fill(body["cmd"])),
                    [fill(_dep_path(d)) for d in body.get("deps", [])],
                )
        else:
            stages[name] = (
                _cmd_module(stage["cmd"]),
                [_dep_path(d) for d in stage.get("deps", [])],
            )
    return stages


def _dep_path(dep: object) -> str:
    return next(iter(dep)) if isinstance(dep, dict) else str(dep)


def _cmd_module(cmd: str) -> str:
    match = re.search(r"python -m ([\w.]+)", cmd)
    if not match:
        raise ValueError(f"dvc.yaml: a stage cmd that is not `python -m module`: {cmd!r}")
    return match.group(1)


def inert(path: Path) -> bool:
    """A module with nothing a stage's results could depend on: a docstring and dunder names
    (``__version__``, ``__all__``) only, as a package's ``__init__`` often is."""
    body = ast.parse(path.read_text(encoding="utf-8")).body
    for node in body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if isinstance(node, ast.Assign) and all(
            isinstance(t, ast.Name) and t.id.startswith("__") for t in node.targets
        ):
            continue
        return False
    return True


def covered(path: Path, deps: list[str], repo: Path = REPO) -> bool:
    rel = path.relative_to(repo).as_posix()
    return any(rel == d.rstrip("/") or rel.startswith(d.rstrip("/") + "/") for d in deps)


def undeclared(repo: Path = REPO, *, only: str | None = "evalpipe") -> dict[str, list[str]]:
    """For each stage, the project modules its command imports that its deps do not cover
    (``only="evalpipe"``: library modules only; ``None``: stage helpers too)."""
    modules, edges = import_graph(repo)
    missing: dict[str, list[str]] = {}
    for stage, (module, deps) in stage_commands(repo).items():
        for mod in sorted(closure(module, edges)):
            if only and not mod.startswith(only):
                continue
            if mod in modules and not inert(modules[mod]) and not covered(modules[mod], deps, repo):
                missing.setdefault(stage, []).append(mod)
    return missing


def stage_lines(repo: Path = REPO) -> dict[str, int]:
    return {
        p.name: len(p.read_text(encoding="utf-8").splitlines())
        for p in sorted((repo / "stages").glob("*.py"))
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=REPO)
    parser.add_argument("--quiet", action="store_true", help="the figures only")
    args = parser.parse_args()
    repo = args.repo.resolve()
    modules, edges = import_graph(repo)
    groups = cycles(edges)
    on_cycle = cycle_edges(edges)
    private = private_imports(edges)
    missing = undeclared(repo)
    missing_all = undeclared(repo, only=None)
    lines = stage_lines(repo)
    print(f"modules: {len(modules)}, imports between them: {len(edges)}")
    print(
        f"import cycles: {len(groups)} groups, {sum(len(g) for g in groups)} modules, "
        f"{len(on_cycle)} imports on a cycle ({sum(i.in_function for i in on_cycle)} inside functions)"
    )
    print(f"imports inside functions: {sum(i.in_function for i in edges)}")
    print(f"cross-module private-name imports: {len(private)}")
    upward = upward_imports(edges)
    print(f"imports pointing up a layer: {len(upward)}")
    print(
        f"undeclared stage imports: {sum(map(len, missing.values()))} (stage, evalpipe module) "
        f"pairs in {len(missing)} stages; {sum(map(len, missing_all.values()))} counting stages/ helpers"
    )
    print(
        f"stage lines: total {sum(lines.values())}, largest "
        + ", ".join(f"{k} {v}" for k, v in sorted(lines.items(), key=lambda kv: -kv[1])[:4])
    )
    if args.quiet:
        return
    for group in groups:
        print("cycle:", " <-> ".join(group))
    for imp in on_cycle:
        where = "in a function" if imp.in_function else "top level"
        print(f"  {imp.importer}:{imp.line} -> {imp.target} ({where})")
    for imp in upward:
        print(f"upward: {imp.importer}:{imp.line} -> {imp.target}")
    for imp, name in private:
        print(f"private: {imp.importer}:{imp.line} imports {imp.target}.{name}")
    for stage, mods in missing_all.items():
        print(f"undeclared: {stage}: {', '.join(mods)}")
    for name, count in lines.items():
        print(f"lines: stages/{name} {count}")


if __name__ == "__main__":
    main()
