"""The meta backend plugin: shapes, dtypes, strides and sizes, never data."""
