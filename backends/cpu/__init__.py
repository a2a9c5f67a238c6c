"""The cpu backend plugin (numpy), built exactly like an external plugin: see plugin.py."""
