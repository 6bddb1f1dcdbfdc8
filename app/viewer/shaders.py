"""The shader the robot meshes are drawn with: a two-sided headlight plus ambient light."""

from __future__ import annotations

from pyqtgraph.opengl import shaders

__all__ = ["robot_shader"]

_SHADER = None


def robot_shader() -> shaders.ShaderProgram:
    """A pyqtgraph ShaderProgram (created once) for GLMeshItem(shader=...).

    Lighting is computed in view space from a light at the camera, with abs(n.l) so that
    meshes with inconsistent winding are not black on one side.
    """
    global _SHADER
    if _SHADER is None:
        _SHADER = shaders.ShaderProgram("lagrange_robot", [
            shaders.VertexShader("""
                uniform mat4 u_mvp;
                uniform mat3 u_normal;
                attribute vec4 a_position;
                attribute vec3 a_normal;
                attribute vec4 a_color;
                varying vec4 v_color;
                varying vec3 v_normal;
                void main() {
                    v_normal = normalize(u_normal * a_normal);
                    v_color = a_color;
                    gl_Position = u_mvp * a_position;
                }
            """),
            shaders.FragmentShader("""
                #ifdef GL_ES
                precision mediump float;
                #endif
                varying vec4 v_color;
                varying vec3 v_normal;
                void main() {
                    vec3 n = normalize(v_normal);
                    float head = abs(n.z);
                    float key = abs(dot(n, normalize(vec3(0.4, 0.6, 0.7))));
                    float light = 0.28 + 0.45 * head + 0.35 * key;
                    gl_FragColor = vec4(min(v_color.rgb * light, vec3(1.0)), v_color.a);
                }
            """),
        ])
    return _SHADER
