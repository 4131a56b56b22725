"""The stream router: which input partitions each stream's lines came from, in bounded memory."""

from __future__ import annotations

from logstream.service.streams import StreamRouter


def test_streams_of_a_revoked_partition_are_returned_once():
    router = StreamRouter()
    router.seen("a", "logs", 0)
    router.seen("b", "logs", 1)
    router.seen("c", "logs", 0)
    router.seen("c", "logs", 1)
    assert sorted(router.revoke({("logs", 1)})) == ["b", "c"]
    assert router.revoke({("logs", 1)}) == [] and len(router) == 1


def test_a_router_keeps_the_streams_seen_most_recently_and_hands_over_those_it_pushes_out():
    """Keys that never end (request ids without a session pattern) do not grow it without end."""
    router = StreamRouter(max_streams=3)
    for key in ["a", "b", "c", "a", "d", "e"]:  # "a" seen again before "d": "b" and "c" go first
        router.seen(key, "logs", 0)
    assert len(router) == 3
    assert router.take_pushed_out() == ["b", "c"] and router.take_pushed_out() == []
    assert sorted(router.revoke({("logs", 0)})) == ["a", "d", "e"]
    router.seen("f", "logs", 2)
    assert router.take_pushed_out() == [] and router.revoke({("logs", 2)}) == ["f"]
