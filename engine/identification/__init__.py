"""Rigid-body parameter identification: from synthetic sine motions (:mod:`.synthetic`, the
differentiable-robot-model paper's learning loop) and from joint logs (:mod:`.from_log`; by
default the closed-form weighted least squares on the base parameters, :mod:`.closed_form`)."""

from engine.identification.closed_form import ClosedFormResult, closed_form_fit
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
    "ClosedFormResult",
    "IdentificationConfig",
    "IdentificationResult",
    "LogIdentificationConfig",
    "LogIdentificationResult",
    "closed_form_fit",
    "identification_job",
    "identify",
    "identify_from_log",
    "log_identification_job",
    "robot_prepare_config",
]
