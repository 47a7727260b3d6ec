"""Sources of change events."""
