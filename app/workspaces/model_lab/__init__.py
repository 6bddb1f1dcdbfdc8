"""The Model lab workspace."""
