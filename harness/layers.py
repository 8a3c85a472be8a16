"""The house's layers along the data path, the import walk that holds the code to them, and its picture.

`python -m harness.layers` checks every import of harness/, strategies/ and tasks/ (lazy ones inside functions
included) against LAYERS and exits 1 naming each import that runs up the path or closes a circle;
`python -m harness.layers --draw docs/images/architecture.png` redraws docs/architecture.md's picture from the
same walk.
"""
from __future__ import annotations

import argparse
import ast
import sys
import textwrap
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOP_PACKAGES = ("harness", "strategies", "tasks")

# Bottom first: a module may import from its own layer and the layers below it, never from one above.
LAYERS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("core", ("harness", "harness.core"), "foundations any layer may use: config, errors, tokens, clock, secrets"),
    ("tasks", ("tasks",), "task families, their environments and tools, the suites"),
    ("models", ("harness.models",), "talking to models: the client, cache policies, the mock, serve-mock"),
    ("conversation", ("harness.conversation",), "the event log of a run, the view folded from it, a strategy's context"),
    ("strategies", ("strategies",), "strategies and the adapters that run real libraries' code"),
    ("results", ("harness.results",), "results on disk, metrics, statistics, reports, plots"),
    ("executors", ("harness.executors",), "where cells run: in process, in processes, on Ray"),
    ("run", ("harness.run",), "running a cell and an invocation of many"),
    ("traces", ("harness.traces",), "recorded trajectories and their replay under any strategy"),
    ("faces", ("harness.api", "harness.cli", "harness.sweep", "harness.notebook", "harness.figures",
               "harness.layers", "harness.__main__"), "what users call: the CLI, the Python API, sweeps, notebooks"),
    ("bench", ("harness.bench",), "the development bench"),
)


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (a package's face when a name of it is imported)
    line: int


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    """Every module of the three top packages, by dotted name."""
    found: dict[str, Path] = {}
    for package in TOP_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[module_name(path)] = path
    return found


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The longest known module that `name` (a module, or a module's attribute) falls in."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imports(known: dict[str, Path] | None = None) -> list[Import]:
    """Every import between the project's modules, at any depth of the code (lazy imports count)."""
    known = known if known is not None else modules()
    found: list[Import] = []
    for source, path in known.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [f"{node.module}.{alias.name}" for alias in node.names]
            for name in names:
                target = _resolve(name, known)
                if target is not None and target != source and not source.startswith(target + "."):
                    found.append(Import(source, target, node.lineno))
    return found


def layer_of(module: str) -> int:
    """The index in LAYERS of the layer that holds `module` (the most specific prefix wins)."""
    best, best_length = -1, -1
    for index, (_, prefixes, _) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_length:
                best, best_length = index, len(prefix)
    if best < 0:
        raise LookupError(f"{module}: in no layer of harness.layers.LAYERS")
    return best


def upward(found: list[Import]) -> list[Import]:
    """The imports that run up the path: from a layer into one above it."""
    return [edge for edge in found if layer_of(edge.target) > layer_of(edge.source)]


def circles(found: list[Import]) -> list[list[str]]:
    """Each circle of modules importing one another (a strongly connected component of two or more)."""
    graph: dict[str, set[str]] = {}
    for edge in found:
        graph.setdefault(edge.source, set()).add(edge.target)
        graph.setdefault(edge.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
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
                        result.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return result


def problems() -> list[str]:
    """One line per import up the path and per circle; empty when the house holds to its layers."""
    found = imports()
    lines = [f"{edge.source} (line {edge.line}) imports {edge.target}: up from {LAYERS[layer_of(edge.source)][0]} "
             f"to {LAYERS[layer_of(edge.target)][0]}" for edge in upward(found)]
    lines += [f"circle: {' <-> '.join(circle)}" for circle in circles(found)]
    return lines


def draw(path: Path) -> None:
    """The layers bottom to top as boxes, each listing its modules, with the number of imports between layers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    known = modules()
    found = imports(known)
    members: dict[int, set[str]] = {}
    for name in known:
        if name not in TOP_PACKAGES and name not in {p for _, prefixes, _ in LAYERS for p in prefixes
                                                      if known.get(p, Path()).name == "__init__.py"}:
            members.setdefault(layer_of(name), set()).add(_room(name, known))
    between = Counter((layer_of(edge.source), layer_of(edge.target)) for edge in found
                      if layer_of(edge.source) != layer_of(edge.target))
    count = len(LAYERS)
    figure, axes = plt.subplots(figsize=(11, 1.05 * count + 1))
    axes.set_xlim(0, 11)
    axes.set_ylim(-0.3, count + 0.2)
    axes.axis("off")
    for position, (name, _, job) in enumerate(LAYERS):
        y = position
        axes.add_patch(plt.Rectangle((0.2, y), 6.6, 0.8, facecolor="#eef3fb", edgecolor="#3a5a8c"))
        axes.text(0.35, y + 0.57, name, fontsize=11, fontweight="bold", va="center")
        axes.text(1.9, y + 0.57, job, fontsize=8, va="center", color="#333333")
        text = "\n".join(textwrap.wrap(", ".join(sorted(members.get(position, set()))), 105)[:2])
        axes.text(0.35, y + 0.22, text, fontsize=6.5, va="center", color="#555555")
        uses = sorted(((target, number) for (source, target), number in between.items() if source == position),
                      reverse=True)
        said = ("imports " + ", ".join(f"{LAYERS[target][0]} ({number})" for target, number in uses)
                if uses else "imports no other layer")
        axes.text(7.0, y + 0.4, "\n".join(textwrap.wrap(said, 60)), fontsize=7, va="center", color="#3a5a8c")
    axes.annotate("", xy=(0.1, count - 0.1), xytext=(0.1, 0.1),
                  arrowprops={"arrowstyle": "->", "color": "#999999"})
    axes.set_title("ctxbench: layers along the data path (bottom: foundations; a layer imports only layers below it;\n"
                   "the number: imports between two layers, counted by `python -m harness.layers`)", fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)


def _room(module: str, known: dict[str, Path]) -> str:
    """How the picture names a module: by its name within its layer's package, a subpackage as `name/`."""
    prefix = max((p for p in LAYERS[layer_of(module)][1] if module == p or module.startswith(p + ".")), key=len)
    rest = module[len(prefix):].lstrip(".") or prefix.rpartition(".")[2]
    first = rest.split(".")[0]
    package = f"{prefix}.{first}" if rest != prefix.rpartition(".")[2] else prefix
    return f"{first}/" if known.get(package, Path()).name == "__init__.py" and package != prefix else first


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.layers", description=__doc__.splitlines()[0])
    parser.add_argument("--draw", type=Path, metavar="PNG", help="write the picture of the layers to this file")
    args = parser.parse_args(argv)
    if args.draw:
        draw(args.draw)
        print(f"wrote {args.draw}")
    found = problems()
    for line in found:
        print(line, file=sys.stderr)
    if not found:
        print(f"{len(modules())} modules in {len(LAYERS)} layers: no import up the path, no circle")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
