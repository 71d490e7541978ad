"""The tier DAG: topological order over parents and compile builders, cycle reports."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


class CycleError(ValueError):
    def __init__(self, cycle: list[str]) -> None:
        self.cycle = cycle
        super().__init__(" -> ".join(cycle))


def topological_order(deps: Mapping[str, Sequence[str]]) -> list[str]:
    """Tiers with every dependency (parent, compile builder) first, else declaration order.

    A dependency that is not a key is ignored here (validation reports it).
    Raises CycleError naming the loop.
    """
    order: list[str] = []
    state: dict[str, str] = {}  # "visiting" or "done"

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == "done":
            return
        if state.get(name) == "visiting":
            start = path.index(name)
            raise CycleError([*path[start:], name])
        state[name] = "visiting"
        for dep in deps.get(name, ()):
            if dep in deps:
                visit(dep, [*path, name])
        state[name] = "done"
        order.append(name)

    for name in deps:
        visit(name, [])
    return order
