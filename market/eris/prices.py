"""Exponential prices and the committed-usage ledger of Eris (spec §2.3, §3.1).

``price(u, C, gamma) = gamma^(u/C) - 1`` computed as ``expm1((u/C) ln gamma)``; ``gamma - 1`` when
``C = 0`` (D25). The ledger holds ``rho[e, t]`` (MB per link and slot) and ``eta[r, k, t]``
(resources per site, type and slot); slot index 0 is unused.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from marketsim.market.eris.network import Links
from marketsim.market.eris.types import ErisConfig, ErisSites

__all__ = ["price", "SlotView", "ErisState", "CR_CONSTANT", "competitive_constant"]


def price(used: np.ndarray | float, cap: np.ndarray | float, gamma: np.ndarray | float) -> np.ndarray:
    """Eq. (6): ``gamma^(used/cap) - 1`` (vectorised); ``gamma - 1`` where ``cap == 0``."""
    u = np.asarray(used, dtype=float)
    c = np.asarray(cap, dtype=float)
    g = np.asarray(gamma, dtype=float)
    safe = np.where(c > 0, c, 1.0)
    out = np.expm1(u / safe * np.log(g))
    return np.where(c > 0, out, g - 1.0)


def competitive_constant(gamma_d: float, gamma_k: float | tuple[float, ...]) -> float:
    """Thm. 5 with D15: ``2 log2(gamma_d * max_k gamma_k)``."""
    gk = max(gamma_k) if isinstance(gamma_k, tuple) else gamma_k
    return float(2.0 * np.log2(gamma_d * gk))


CR_CONSTANT = competitive_constant(1000.0, 1000.0)


@dataclass(frozen=True)
class SlotView:
    """Frozen prices and residuals of one slot: ``alpha`` (L,), ``res_link`` (L,) MB,
    ``beta`` (R, K), ``res_cap`` (R, K)."""

    t: int
    alpha: np.ndarray
    res_link: np.ndarray
    beta: np.ndarray
    res_cap: np.ndarray


class ErisState:
    """Committed usage ``rho`` (L, T+1) and ``eta`` (R, K, T+1) with per-slot prices.

    ``version[t]`` counts commits into slot t (0 = untouched; untouched slots share one view)."""

    def __init__(self, sites: ErisSites, links: Links, cfg: ErisConfig) -> None:
        T = cfg.horizon
        self.sites = sites
        self.links = links
        self.cfg = cfg
        self.rho = np.zeros((links.L, T + 1))
        self.eta = np.zeros((sites.R, sites.K, T + 1))
        self.version = np.zeros(T + 1, dtype=np.int64)
        self.gamma_k = cfg.gamma_vector(sites.K)

    def view(self, t: int) -> SlotView:
        """Prices and residuals of slot ``t`` from committed usage."""
        cap = self.sites.capacity
        rho = self.rho[:, t]
        eta = self.eta[:, :, t]
        alpha = price(rho, self.links.cap, self.links.gamma)
        beta = price(eta, cap, self.gamma_k[None, :])
        return SlotView(t, alpha, self.links.cap - rho, beta, np.maximum(cap - eta, 0.0))

    def commit(self, t: int, link_volume: np.ndarray, usage: np.ndarray) -> None:
        """Add one slot plan's traffic and resources (raises RuntimeError if a limit is exceeded)."""
        self.rho[:, t] += link_volume
        self.eta[:, :, t] += usage
        self.version[t] += 1
        cap = self.sites.capacity
        if (self.eta[:, :, t] > cap + 1e-9 * np.maximum(1.0, cap)).any():
            raise RuntimeError(f"Eris bug: resource capacity exceeded in slot {t}")
        if (self.rho[:, t] > self.links.cap + 1e-9 * np.maximum(1.0, self.links.cap)).any():
            raise RuntimeError(f"Eris bug: link budget exceeded in slot {t}")

    def snapshot(self) -> ErisState:
        """Deep copy (for what-if audits)."""
        return copy.deepcopy(self)
