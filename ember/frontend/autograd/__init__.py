"""Define-by-run automatic differentiation (graph, engine, grad modes, Function)."""
