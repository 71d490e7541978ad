"""images.toml -> a frozen, validated Stack (schema, grammar, load, resolve, rules, model).

May import: build_graph.gpu, errors. Nothing of plan, engine, stages or the task layer.
"""
