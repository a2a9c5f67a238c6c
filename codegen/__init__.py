"""The generator: ops_registry.yaml -> ember/_generated/ and docs/ops.md."""
