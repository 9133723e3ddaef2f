"""The shards' own links (emulator/links.py): a window's messages arrive whole and in their
types, large ones too, only from the run's shards, and a closed link ends a wait."""

from __future__ import annotations

import os
import socket
from contextlib import contextmanager
from typing import Iterator

import numpy as np
import pytest

from gridemu.emulator.links import _HELLO, Links, PeerLost
from gridemu.emulator.shard import StepInfo
from gridemu.model.messages import MSG_DTYPE, PackedRows, pack_rows
from tests.conftest import in_threads


@contextmanager
def linked(n: int, token: bytes = b"t" * 32, before_connect=None) -> Iterator[list[Links]]:
    """``n`` shards' links, connected to each other; all closed on leaving, whatever happened."""
    links = [Links(k, n, token) for k in range(n)]
    try:
        if before_connect is not None:
            before_connect(links)
        addresses = [x.address for x in links]
        in_threads([lambda x=x: x.connect(addresses, timeout=20) for x in links])
        yield links
    finally:
        for x in links:
            x.close()


def info(k: int, out_min: dict[int, float]) -> StepInfo:
    return StepInfo(next_time=1.5 + k, bound=2.0, out_min=out_min, events=10 * k, done=k)


def rows(n: int, at: float) -> list[tuple]:
    batch = np.zeros(n, dtype=MSG_DTYPE)
    batch["deliver"] = at + np.arange(n)
    batch["dst"] = 1
    return batch.tolist()


def test_a_window_of_messages_arrives_whole_from_every_other_shard():
    with linked(3) as links:
        packed = pack_rows(rows(5, 3.0))
        array = np.zeros(4, dtype=MSG_DTYPE)
        array["deliver"] = [7.0, 8.0, 9.0, 10.0]
        # shard 0 sends shard 1 packed rows and shard 2 nothing; shard 2 sends shard 1 an array.
        links[0].post(4, info(0, {1: 3.0}), [None, packed, None], False)
        links[2].post(4, info(2, {1: 7.0, 0: 8.0}), [array[:1], array, None], True)
        links[1].post(4, info(1, {}), [None, None, None], False)
        got1 = links[1].collect(4)
        assert sorted(got1) == [0, 2]
        i0, b0, cut0 = got1[0]
        assert i0 == info(0, {1: 3.0}) and cut0 is False
        assert isinstance(b0, PackedRows) and (b0.n, b0.first, b0.data) == (packed.n, packed.first, packed.data)
        assert b0.rows() == packed.rows()
        i2, b2, cut2 = got1[2]
        assert i2.out_min == {1: 7.0, 0: 8.0} and cut2 is True
        assert b2.dtype == MSG_DTYPE and np.array_equal(b2, array) and b2.flags.writeable
        got0 = links[0].collect(4)
        assert got0[1][1] is None and np.array_equal(got0[2][1], array[:1])
        assert links[2].collect(4)[0][1] is None  # shard 0 had nothing for shard 2


def test_large_frames_both_ways_at_once_do_not_block_the_two_shards():
    with linked(2) as links:
        big = np.zeros(100_000, dtype=MSG_DTYPE)  # 17.8 MB, far past any socket buffer
        big["deliver"] = np.arange(len(big))
        for k, x in enumerate(links):
            x.post(0, info(k, {1 - k: 0.0}), [big, big], False)  # never blocks: the rest waits
        got = in_threads([lambda x=x: x.collect(0) for x in links], timeout=60)
        for k in range(2):
            assert np.array_equal(got[k][1 - k][1], big)


def test_a_link_without_the_runs_token_is_turned_away():
    strangers: list[socket.socket] = []

    def stranger(links: list[Links]) -> None:
        s = socket.create_connection(links[1].address)
        s.sendall(_HELLO.pack(0, os.urandom(32)))  # a shard's id, not the run's token
        strangers.append(s)

    with linked(2, before_connect=stranger) as links:
        try:
            strangers[0].settimeout(10)
            assert strangers[0].recv(1) == b""  # closed by shard 1
            links[0].post(1, info(0, {1: 1.0}), [None, pack_rows(rows(1, 1.0))], False)
            got = links[1].collect(1)
            assert list(got) == [0] and got[0][1].n == 1
        finally:
            strangers[0].close()


def test_a_closed_link_ends_the_wait_with_peer_lost():
    with linked(3) as links:
        links[2].post(0, info(2, {}), [None, None, None], False)
        links[0].close()  # shard 0 failed before sending window 0
        with pytest.raises(PeerLost, match="the link from shard 0 closed"):
            links[1].collect(0)


def test_only_plain_batches_travel():
    with linked(2) as links:
        with pytest.raises(TypeError, match="a batch of type dict cannot travel"):
            links[0].post(0, info(0, {1: 0.0}), [None, {"x": 1}], False)
