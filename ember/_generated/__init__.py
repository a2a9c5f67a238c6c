"""Files generated from ops_registry.yaml by `python -m codegen`."""
