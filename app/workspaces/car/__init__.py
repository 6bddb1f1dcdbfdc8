"""The Car planner workspace."""
