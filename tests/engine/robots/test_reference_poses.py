"""A robot's published standing pose (SRDF ``<group_state>``), read as Pinocchio's
``loadReferenceConfigurations`` reads it, and found beside the URDF of a description package."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from robots_testdata import example_robot_data

from engine.robots import load_urdf
from engine.robots.model import RobotModel
from engine.robots.reference_poses import reference_configurations, srdf_for, standing_joint_positions


@pytest.mark.parametrize(("urdf", "srdf", "pose"), [
    ("solo_description/robots/solo12.urdf", "solo.srdf", "standing"),
    ("go2_description/urdf/go2.urdf", "go2.srdf", "standing"),
    ("talos_data/robots/talos_reduced.urdf", "talos.srdf", "half_sitting"),
])
def test_standing_pose_matches_pinocchios_reference_configuration(urdf, srdf, pose):
    path = example_robot_data(urdf)
    found = srdf_for(path)
    assert found is not None and found.name == srdf
    pmodel = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    pin.loadReferenceConfigurations(pmodel, str(found), False)
    reference = pmodel.referenceConfigurations[pose]
    model = RobotModel.from_description(load_urdf(path))
    ours = standing_joint_positions(path, model.joint_names)
    assert ours is not None and np.abs(ours).max() > 0.1              # a bent pose, not zeros
    for i, name in enumerate(model.joint_names):
        j = pmodel.getJointId(name)
        np.testing.assert_allclose(ours[i], reference[pmodel.joints[j].idx_q], atol=1e-12, err_msg=name)


def test_no_srdf_or_no_standing_pose_gives_none(tmp_path):
    robot = tmp_path / "pkg" / "robots" / "r.urdf"
    robot.parent.mkdir(parents=True)
    robot.write_text("<robot name='r'/>")
    assert srdf_for(robot) is None and standing_joint_positions(robot, ["a"]) is None
    (tmp_path / "pkg" / "srdf").mkdir()
    (tmp_path / "pkg" / "srdf" / "r.srdf").write_text(
        '<robot name="r"><group_state name="tucked" group="all"><joint name="a" value="0.5"/></group_state>'
        '<group_state name="standing" group="all"><joint name="root_joint" value="0 0 1 0 0 0 1"/>'
        '<joint name="a" value="0.3"/></group_state></robot>')
    assert reference_configurations(srdf_for(robot)) == {"tucked": {"a": 0.5}, "standing": {"a": 0.3}}
    np.testing.assert_array_equal(standing_joint_positions(robot, ["b", "a"]), [0.0, 0.3])
    assert standing_joint_positions(robot, ["b"]) is None             # names none of the joints
    (tmp_path / "pkg" / "srdf" / "r.srdf").write_text("<robot")        # unreadable: optional, no pose
    assert standing_joint_positions(robot, ["a"]) is None
