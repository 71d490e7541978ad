"""images.toml -> a frozen, validated Stack (schema, grammar, load, resolve, rules, model).

May import: build_graph.gpu and the ground modules. Nothing of plan, docker, registry,
stages or above.
"""
