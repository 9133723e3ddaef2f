"""The cost of accepting foreign load (thesis section 4.2).

``expected_delay`` is EG(L, Φ): the expected delay of the next local job when a site
whose local queue ends at L accepts a foreign load Φ, with local jobs arriving as a
Poisson process of rate λ (equation 4.1, closed form below it).
"""

from __future__ import annotations

import math


def expected_delay(load: float, foreign: float, rate: float) -> float:
    """EG(L_k, Φ_k) = Φ_k + e^{-λ L_k} / λ · (e^{-λ Φ_k} - 1)."""
    if rate <= 0:
        raise ValueError(f"expected_delay: the arrival rate must be > 0, got {rate}")
    if load < 0 or foreign < 0:
        raise ValueError(f"expected_delay: load and foreign load must be >= 0, got {load}, {foreign}")
    return foreign + math.exp(-rate * load) / rate * math.expm1(-rate * foreign)
