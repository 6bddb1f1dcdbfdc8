"""Rigid-body parameter identification: from synthetic sine motions (:mod:`.synthetic`, the
differentiable-robot-model paper's learning loop) and from joint logs (:mod:`.from_log`)."""

from engine.identification.from_log import (
                                            LogIdentificationConfig,
                                            LogIdentificationResult,
                                            identify_from_log,
                                            log_identification_job,
                                            robot_prepare_config,
)
from engine.identification.synthetic import (
                                            IdentificationConfig,
                                            IdentificationResult,
                                            identification_job,
                                            identify,
)

__all__ = [
    "IdentificationConfig",
    "IdentificationResult",
    "LogIdentificationConfig",
    "LogIdentificationResult",
    "identification_job",
    "identify",
    "identify_from_log",
    "log_identification_job",
    "robot_prepare_config",
]
