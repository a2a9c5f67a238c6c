"""The dispatcher's per-call functions, generated from ops_registry.yaml by `python -m codegen`."""
