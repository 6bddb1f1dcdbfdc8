"""The Eigenmode designer workspace."""
