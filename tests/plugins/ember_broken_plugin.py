"""A plugin that fails at import, as a plugin with a missing dependency would."""
raise ImportError("ember_broken_plugin needs the 'vendor_sdk' package, which is not installed")
