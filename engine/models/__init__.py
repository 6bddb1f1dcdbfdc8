"""Learned dynamics models: NODE, L-NODE, SyMo, E2E-SyMo and a black-box MLP, behind one interface."""

from engine.models.base import LearnedDynamics, ModelSpec
from engine.models.registry import (
                                    PAPER_MODELS,
                                    build_model,
                                    load_model,
                                    model_names,
                                    register_model,
                                    save_model,
)

__all__ = ["LearnedDynamics", "ModelSpec", "PAPER_MODELS", "build_model", "load_model", "model_names",
           "register_model", "save_model"]
