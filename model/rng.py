"""Random streams (DESIGN.md, determinism): one per (site, purpose), spawned from the run's
seed by a stable key, never from the shard layout or the order of replies."""
from __future__ import annotations

import numpy as np

# Purposes of the per-site streams; a key is part of what a seed means, so never reuse one.
PURPOSE_ARRIVALS = 1  # workload generator: inter-arrival times
PURPOSE_SIZES = 2  # workload generator: job sizes
PURPOSE_PROCS = 3  # rigid workloads: processor counts
PURPOSE_BROKER = 4  # the random broker's choice of site
PURPOSE_COALITION = 5  # averaging game: whether a site joins a period's coalition
PURPOSE_GOSSIP = 6  # gossip averaging: the neighbor a site exchanges with each round
PURPOSE_CRASHES = 7  # faults: a site's random times to failure and to repair
PURPOSE_MESSAGE_FAULTS = 8  # faults: whether a message a site sends is lost or late, and by how much
PURPOSE_GM_SAMPLE = 9  # decentralized GM: the sites a site asks
PURPOSE_DC_SAMPLE = 10  # decentralized DIRECTCONTR: the sites a site asks
PURPOSE_DEDICATED = 11  # dedicated workloads (thesis ch. 3): the jobs for a machine, round after round


def site_rng(seed: int, site_id: int, purpose: int) -> np.random.Generator:
    """The random stream of one (site, purpose): independent of shards and reply order."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(site_id, purpose)))
