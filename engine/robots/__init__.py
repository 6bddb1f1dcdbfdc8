"""Robots: URDF loading, the differentiable rigid-body model, identification and IK.

``RobotModel`` (engine.robots.model) is the batched, differentiable Featherstone engine;
``load_urdf``/``parse_urdf_string`` (engine.robots.urdf) give the validated, immutable
``RobotDescription`` (engine.robots.description); ``resolve_uri`` finds mesh files.
"""

from engine.robots.description import RobotDescription
from engine.robots.model import JointLimits, RobotModel
from engine.robots.urdf import URDFError, load_urdf, parse_urdf_string, resolve_uri

__all__ = [
           "JointLimits",
           "RobotDescription",
           "RobotModel",
           "URDFError",
           "load_urdf",
           "parse_urdf_string",
           "resolve_uri",
]
