"""The Robot workspace."""
