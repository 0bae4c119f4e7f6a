"""`GroupCoordinator.group_summaries` and `group_kind`: every group in one line, whatever its
kind, agreeing with the group's own view."""

from __future__ import annotations

from coordinator_engine import GroupSummary

from .consumer_harness import ConsumerContext
from .harness import GROUP, Context
from .test_handoff import GROUP as HANDOFF_GROUP
from .test_handoff import stable_pair


def test_a_classic_group_in_one_line() -> None:
    ctx = Context()
    ctx.stable_group_of_two()
    assert ctx.coord.group_summaries() == [
        GroupSummary(
            group_id=GROUP,
            kind="classic",
            state="Stable",
            generation_id=2,
            protocol="range",
            member_count=2,
        )
    ]
    assert ctx.coord.group_kind(GROUP) == "classic"
    assert ctx.coord.group_kind("nobody") is None


def test_a_handoff_group_in_one_line_is_its_plan_s_epoch() -> None:
    ctx = stable_pair()
    view = ctx.view()
    assert ctx.coord.group_summaries() == [
        GroupSummary(
            group_id=HANDOFF_GROUP,
            kind="handoff",
            state="Stable",
            generation_id=view.epoch,
            protocol=None,
            member_count=2,
        )
    ]
    assert ctx.coord.group_kind(HANDOFF_GROUP) == "handoff"


def test_a_consumer_group_in_one_line_names_its_server_assignor() -> None:
    ctx = ConsumerContext(topics={"foo": 4})
    ctx.join("m1")
    ctx.join("m2", server_assignor="range")
    (summary,) = ctx.coord.group_summaries()
    assert summary == GroupSummary(
        group_id="fooup",
        kind="consumer",
        state=ctx.group().state.value,
        generation_id=2,
        protocol="range",
        member_count=2,
    )
    assert ctx.coord.group_kind("fooup") == "consumer"


def test_summaries_of_named_groups_skip_those_that_do_not_exist() -> None:
    ctx = Context()
    ctx.stable_group_of_one(group_id="b")
    ctx.stable_group_of_one(group_id="a")
    summaries = ctx.coord.group_summaries(["a", "nobody", "b"])
    assert [s.group_id for s in summaries] == ["a", "b"]
    assert [s.group_id for s in ctx.coord.group_summaries()] == ["b", "a"]  # as made
