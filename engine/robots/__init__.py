"""Robots: URDF loading, the differentiable rigid-body model, identification and IK.

``RobotModel`` (engine.robots.model) is the batched, differentiable Featherstone engine;
``CompiledCalls`` (engine.robots.compiled_calls) its compiled kernels on numpy arrays, for
many small calls;
``load_urdf``/``parse_urdf_string`` (engine.robots.urdf) give the validated, immutable
``RobotDescription`` (engine.robots.description); ``resolve_uri`` finds mesh files.
"""

from engine.robots.compiled_calls import CompiledCalls
from engine.robots.description import RobotDescription
from engine.robots.model import JointLimits, RobotModel
from engine.robots.urdf import URDFError, load_urdf, parse_urdf_string, resolve_uri

__all__ = [
           "CompiledCalls",
           "JointLimits",
           "RobotDescription",
           "RobotModel",
           "URDFError",
           "load_urdf",
           "parse_urdf_string",
           "resolve_uri",
]
