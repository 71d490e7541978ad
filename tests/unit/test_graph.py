"""The tier DAG: order and cycles."""

from __future__ import annotations

import pytest

from build_graph.manifest.graph import CycleError, topological_order


def test_parents_and_builders_come_first_else_declaration_order() -> None:
    deps = {
        "runner": ["training"],
        "training": ["base"],
        "base": ["torch"],
        "torch": ["builder"],
        "builder": [],
        "docs": [],
    }
    assert topological_order(deps) == ["builder", "torch", "base", "training", "runner", "docs"]


def test_unknown_dependencies_are_left_to_validation() -> None:
    assert topological_order({"a": ["missing"], "b": ["a"]}) == ["a", "b"]


def test_cycle_names_the_loop() -> None:
    with pytest.raises(CycleError) as caught:
        topological_order({"a": ["c"], "b": ["a"], "c": ["b"]})
    assert str(caught.value) == "a -> c -> b -> a"


def test_self_dependency_is_a_cycle() -> None:
    with pytest.raises(CycleError, match="x -> x"):
        topological_order({"x": ["x"]})
