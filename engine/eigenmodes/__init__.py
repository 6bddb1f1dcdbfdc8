"""Eigenmode designer (METHODS section 3): learn a control potential that turns a pick-and-place
swing of the double pendulum into a natural oscillation of the closed loop, then stabilise it.

Modules: ``config`` (dataclasses), ``potential`` (V_theta), ``dynamics`` (closed loop, RK4),
``losses``, ``checks``, ``train`` (the learning job), ``orbit`` (the desired orbit),
``stabilise`` (u_E + u_M), ``multipliers`` (monodromy, cycle multipliers), ``storage``
(save/load, CSV), ``jobs`` (job bodies for CLI and GUI), ``sweep`` (appendix B ablations).
"""
