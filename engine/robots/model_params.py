"""The learnable link parameters and the copies of a :class:`engine.robots.model.RobotModel`.

A mixin of the model (it uses the model's buffers: ``_link_mass``, ``_link_com``,
``_link_inertia``, ``_damping``, the link and joint indices); see the model's docstring for
the API.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

import torch
from torch import nn

from engine.robots import dynamics_body_major as dyn
from engine.robots.description import Inertial, Origin, RobotDescription
from engine.robots.parametrizations import KINDS, PositiveScalar, default_parametrization
from engine.robots.urdf import check_inertial

__all__ = ["LinkParameters"]


class LinkParameters:
    """Learnable masses, centres of mass, inertias and joint damping; copies of the model."""

    # ------------------------------------------------------------------ learnable parameters
    def make_learnable(self, link: str, kind: str, parametrization: None | str | nn.Module = None) -> nn.Module:
        """Make ``kind`` ("mass", "com", "inertia", "damping") of ``link`` learnable.

        ``parametrization``: None for the default physical one (see
        :mod:`engine.robots.parametrizations`), "softplus" or "exp" for a positive scalar, or
        any ``nn.Module`` whose ``forward()`` returns the value (shape ``()``, ``(3,)``,
        ``(3, 3)``). Returns the module (registered under ``model.learnable``; its
        parameters are in ``model.parameters()``).
        """
        if kind not in KINDS:
            raise ValueError(f"unknown parameter kind {kind!r}; expected one of {KINDS}")
        l = self._link_idx(link)
        if kind == "damping" and link not in self._dof_of_child:
            raise ValueError(f"link {link!r} is not the child of a movable joint; it has no joint damping")
        if kind != "damping" and self.description.link(link).inertial is None and not isinstance(parametrization, nn.Module):
            raise ValueError(f"link {link!r} has no <inertial>; pass a parametrization module with an initial value")
        with torch.no_grad():
            current = {"mass": self.link_mass, "com": self.link_com, "inertia": self.link_inertia,
                       "damping": self._link_damping}[kind](link).detach().clone()
        if parametrization is None:
            module = default_parametrization(kind, current)
        elif isinstance(parametrization, str):
            if kind not in ("mass", "damping"):
                raise ValueError(f"parametrization {parametrization!r} applies to mass and damping only")
            module = PositiveScalar(float(current), kind=parametrization, dtype=self.dtype, device=self.device)
        elif isinstance(parametrization, nn.Module):
            module = parametrization
        else:
            raise TypeError("parametrization must be None, 'softplus', 'exp' or an nn.Module")
        shape = {"mass": (), "com": (3,), "inertia": (3, 3), "damping": ()}[kind]
        try:
            out = module()
        except TypeError as exc:
            raise ValueError(f"the {kind} parametrization must be callable without arguments "
                             f"and return a tensor of shape {shape}: {exc}") from None
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != shape:
            raise ValueError(f"the {kind} parametrization must return a tensor of shape {shape}, "
                             f"got {getattr(out, 'shape', type(out))}")
        key = self._learnable.get((link, kind)) or f"{kind}_{l}"
        self.learnable[key] = module
        self._learnable[(link, kind)] = key
        return module

    def learnable_parameters(self) -> dict[tuple[str, str], nn.Module]:
        """``{(link, kind): module}`` of everything made learnable."""
        return {k: self.learnable[v] for k, v in self._learnable.items()}

    def _learned(self, link: str, kind: str):
        key = self._learnable.get((link, kind))
        return None if key is None else self.learnable[key]()

    def link_mass(self, link: str) -> torch.Tensor:
        """Current mass of ``link`` (kg), shape ``()``."""
        v = self._learned(link, "mass")
        return v if v is not None else self._link_mass[self._link_idx(link)]

    def link_com(self, link: str) -> torch.Tensor:
        """Current centre of mass of ``link`` in the link frame (m), shape ``(3,)``."""
        v = self._learned(link, "com")
        return v if v is not None else self._link_com[self._link_idx(link)]

    def link_inertia(self, link: str) -> torch.Tensor:
        """Current rotational inertia of ``link`` about its CoM, link-frame axes (kg m^2), ``(3, 3)``."""
        v = self._learned(link, "inertia")
        return v if v is not None else self._link_inertia[self._link_idx(link)]

    def _link_damping(self, link: str) -> torch.Tensor:
        v = self._learned(link, "damping")
        return v if v is not None else self._damping[self._dof_of_child[link]]

    def _joint_damping_full(self) -> torch.Tensor:
        """Viscous damping of every movable joint (mimic joints included, topology order), ``(n,)``."""
        learned = [(self._dof_of_child[link], key) for (link, kind), key in self._learnable.items() if kind == "damping"]
        if not learned:
            return self._damping
        idx = torch.tensor([k for k, _ in learned], device=self.device)
        return self._damping.index_put((idx,), torch.stack([self.learnable[key]() for _, key in learned]))

    def joint_damping(self) -> torch.Tensor:
        """Current viscous damping of every joint (N m s/rad or N s/m), ``(dof,)`` (a master joint
        carries its mimic joints' damping times their multipliers squared)."""
        d = self._joint_damping_full()
        return d if self._G is None else (self._G * self._G * d[:, None]).sum(0)

    def _body_parts(self):
        """(m (n+1,), c (n+1, 3), Ic (n+1, 3, 3)): every body's inertial in its frame (root first), learnables applied."""
        inertial = [(link, kind, key) for (link, kind), key in self._learnable.items() if kind != "damping"]
        if not inertial:
            return self._body_m, self._body_c, self._body_Ic
        tensors = {"mass": self._link_mass, "com": self._link_com, "inertia": self._link_inertia}
        for kind in ("mass", "com", "inertia"):
            sel = [(self._link_index[link], key) for link, k, key in inertial if k == kind]
            if sel:
                idx = torch.tensor([i for i, _ in sel], device=self.device)
                vals = torch.stack([self.learnable[key]() for _, key in sel])
                tensors[kind] = tensors[kind].index_put((idx,), vals)
        return dyn.link_inertia_to_bodies(tensors["mass"], tensors["com"], tensors["inertia"], self._link_body,
                                          self._link_offset, self._n)

    # ------------------------------------------------------------------ copies
    def clone(self):
        """An independent deep copy (learnable modules included)."""
        return copy.deepcopy(self)

    def current_description(self) -> RobotDescription:
        """The description with the current (possibly learned) inertials and damping baked in."""
        desc = self.description
        with torch.no_grad():
            for link, kind in list(self._learnable):
                if kind == "damping":
                    desc = desc.with_joint_dynamics(self._full_joint_names[self._dof_of_child[link]],
                                                    damping=float(self._link_damping(link)))
            for link in {l for l, k in self._learnable if k != "damping"}:
                desc = desc.with_link_inertial(link, _inertial(self.link_mass(link), self.link_com(link),
                                                               self.link_inertia(link)))
        return desc

    def with_link_params(self, mass: Mapping[str, float] | None = None, com: Mapping | None = None,
                         inertia: Mapping | None = None, damping: Mapping[str, float] | None = None,
                         check: bool = True):
        """A new (non-learnable) model with some link parameters replaced.

        mass ``{link: kg}``, com ``{link: (3,) m, link frame}``, inertia ``{link: (3, 3) kg m^2
        about the CoM, link-frame axes}``, damping ``{joint name: N m s/rad}``. The values
        start from the current ones (learned values included); ``check`` validates physical
        consistency (raises ``URDFError``).
        """
        desc = self.current_description()
        links = set(mass or {}) | set(com or {}) | set(inertia or {})
        for link in links:
            self._link_idx(link)
            m = (mass or {}).get(link, self.link_mass(link))
            c = (com or {}).get(link, self.link_com(link))
            I = (inertia or {}).get(link, self.link_inertia(link))
            new = _inertial(m, c, I)
            if check:
                check_inertial(new, link)
            desc = desc.with_link_inertial(link, new)
        for joint, d in (damping or {}).items():
            if joint not in self._full_joint_names:
                raise KeyError(f"no movable joint named {joint!r} in robot {self.name!r}")
            desc = desc.with_joint_dynamics(joint, damping=float(d))
        return type(self)(desc, dtype=self.dtype, device=self.device, gravity=tuple(self.gravity.tolist()))



def _inertial(mass, com, inertia) -> Inertial:
    """An :class:`Inertial` (CoM frame axes = link axes) from tensors or arrays."""
    m = float(torch.as_tensor(mass).detach())
    c = torch.as_tensor(com).detach().cpu().double().numpy().reshape(3)
    I = torch.as_tensor(inertia).detach().cpu().double().numpy().reshape(3, 3)
    I = 0.5 * (I + I.T)
    return Inertial(mass=m, origin=Origin(xyz=tuple(float(x) for x in c)),
                    inertia=(float(I[0, 0]), float(I[0, 1]), float(I[0, 2]), float(I[1, 1]), float(I[1, 2]),
                             float(I[2, 2])))
