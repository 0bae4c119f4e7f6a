"""The simulated consumer's Fetcher replays seed 002's worked example step by step."""

from __future__ import annotations

from webapp.simulation.fetcher import FetchedRange, Fetcher

P0, P1, P2 = ("t", 0), ("t", 1), ("t", 2)


def test_the_eight_polls_of_seed_002_return_the_same_records_in_the_same_rotation() -> None:
    """Three partitions; every fetch brings 4 records of one partition (the first fetchable one
    in queue order, as the article assumes); max.poll.records = 2. The article's step k shows
    the fetch sent at the end of poll k-1 (pipelining), the records poll k returns and the
    partition queue after it."""
    asked_log: list[list[tuple[str, int]]] = []

    def broker(asked: list[tuple[tuple[str, int], int]]) -> dict[tuple[str, int], int]:
        asked_log.append([tp for tp, _ in asked])
        tp, offset = asked[0]
        return {tp: offset + 4}

    fetcher = Fetcher(broker, max_poll_records=2)
    fetcher.assign({P0: 0, P1: 0, P2: 0})
    expected = [
        # (fetchable partitions of the fetch this poll consumes, records returned, queue after)
        ([P0, P1, P2], [("t", 0, 0, 2)], [P0, P1, P2]),
        ([P1, P2], [("t", 0, 2, 4)], [P1, P2, P0]),
        ([P2, P0], [("t", 1, 0, 2)], [P1, P2, P0]),
        ([P0], [("t", 1, 2, 4)], [P2, P0, P1]),
        ([P1], [("t", 2, 0, 2)], [P2, P0, P1]),
        (None, [("t", 2, 2, 4)], [P0, P1, P2]),
        ([P2], [("t", 0, 4, 6)], [P0, P1, P2]),
        (None, [("t", 0, 6, 8)], [P1, P2, P0]),
    ]
    fetches_seen = 0
    for step, (fetched, records, queue) in enumerate(expected, start=1):
        got = fetcher.poll()
        assert got == [FetchedRange(*r) for r in records], f"step {step}"
        assert fetcher.assignment == queue, f"step {step}"
        if fetched is not None:
            assert asked_log[fetches_seen] == fetched, f"step {step}"
            fetches_seen += 1
    assert fetcher.positions == {P0: 8, P1: 4, P2: 4}


def test_poll_with_nothing_buffered_fetches_and_returns_at_most_max_poll_records() -> None:
    ends = {P0: 10, P1: 3}
    fetcher = Fetcher(lambda asked: {tp: ends[tp] for tp, _ in asked}, max_poll_records=5)
    fetcher.assign({P0: 0, P1: 0})
    first = fetcher.poll()
    assert first == [FetchedRange("t", 0, 0, 5)]
    second = fetcher.poll()
    assert second == [FetchedRange("t", 0, 5, 10)]
    assert fetcher.poll() == [FetchedRange("t", 1, 0, 3)]
    assert fetcher.poll() == []  # caught up
    ends[P0] = 12
    assert fetcher.poll() == [FetchedRange("t", 0, 10, 12)]


def test_revoked_partitions_lose_their_buffered_records_and_paused_ones_are_not_fetched() -> None:
    fetcher = Fetcher(lambda asked: {tp: off + 10 for tp, off in asked}, max_poll_records=4)
    fetcher.assign({P0: 0, P1: 100})
    assert fetcher.poll() == [FetchedRange("t", 0, 0, 4)]
    fetcher.revoke([P0])
    assert fetcher.assignment == [P1]
    assert fetcher.poll() == [FetchedRange("t", 1, 100, 104)]
    fetcher.paused.add(P2)
    fetcher.assign({P2: 7})
    assert fetcher.fetchable() == []  # P1 buffered, P2 paused
    assert fetcher.positions == {P1: 104, P2: 7}
