"""Per-site random streams made in bulk (``model.rng.site_rngs``) are numpy's own: the
reference is ``default_rng(SeedSequence(seed, spawn_key=(site, purpose)))``, built here
directly, not through gridemu's functions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gridemu.model.rng import BULK_MIN, _StateWords, site_rngs


def numpy_stream(seed: int, site: int, purpose: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(site, purpose)))


@settings(max_examples=60, deadline=None)
@given(
    st.one_of(st.integers(0, 2**32), st.integers(0, 2**130)),
    st.lists(st.one_of(st.integers(0, 2**32 - 1), st.sampled_from([0, 2**32 - 1, 2**32, 2**40])), max_size=12),
    st.one_of(st.integers(0, 12), st.sampled_from([2**32 - 1, 2**32])),
    st.booleans(),
)
def test_bulk_streams_are_numpys_seed_sequence_streams(seed, sites, purpose, bulk):
    if bulk:  # enough sites for the arrays (fewer go one by one through numpy)
        sites = sites + list(range(7, 7 + BULK_MIN))
    got = list(site_rngs(seed, sites, purpose))
    assert len(got) == len(sites)
    for site, rng in zip(sites, got):
        ref = numpy_stream(seed, site, purpose)
        assert rng.bit_generator.state == ref.bit_generator.state, (seed, site, purpose)
        assert rng.exponential(size=4).tolist() == ref.exponential(size=4).tolist()
        assert rng.gamma(2.0, 2.0, size=3).tolist() == ref.gamma(2.0, 2.0, size=3).tolist()


def test_bulk_streams_are_independent_objects_made_in_order():
    first, second, *_ = site_rngs(5, [3] * BULK_MIN, 1)
    a = first.random(4)
    assert second.random(4).tolist() == a.tolist()  # same stream, its own state


def test_precomputed_words_refuse_a_bit_generator_they_were_not_made_for():
    words = np.zeros(4, dtype=np.uint64)
    with pytest.raises(ValueError, match="PCG64 only"):
        np.random.MT19937(_StateWords(words))
