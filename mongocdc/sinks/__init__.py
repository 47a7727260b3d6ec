"""Sinks that change events are written to."""
