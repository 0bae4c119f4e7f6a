"""The dashboard's JSON views of a KIP-848 consumer group (`GroupCoordinator.group` returns a
`ConsumerGroupView` for one): a summary line and the whole group, without touching the
runtime."""

from __future__ import annotations

from coordinator_engine import ConsumerGroupHeartbeatRequest, GroupCoordinator
from coordinator_engine.consumer import ConsumerGroupView
from webapp.dashboard.api import group_detail_json, group_summary
from webapp.runtime.topics import TopicRegistry


def consumer_view() -> ConsumerGroupView:
    coord = GroupCoordinator()
    coord.set_topic_partitions("orders", 2, 0)
    coord.handle(
        ConsumerGroupHeartbeatRequest(
            group_id="g",
            member_id="m1",
            member_epoch=0,
            rebalance_timeout_ms=5000,
            subscribed_topic_names=("orders",),
            topic_partitions=(),
        ),
        0,
    )
    view = coord.group("g")
    assert isinstance(view, ConsumerGroupView)
    return view


def test_a_consumer_group_summary_names_its_kind_and_epoch() -> None:
    assert group_summary(consumer_view()) == {
        "group_id": "g",
        "kind": "consumer",
        "state": "Stable",
        "generation_id": 1,
        "protocol_type": "consumer",
        "protocol": None,
        "leader": None,
        "member_count": 1,
    }


def test_a_consumer_group_detail_shows_each_members_partitions() -> None:
    detail = group_detail_json(consumer_view(), {}, TopicRegistry(), 0)
    assert detail["generation_id"] == detail["assignment_epoch"] == 1
    (member,) = detail["members"]
    assert member["member_epoch"] == 1 and member["member_state"] == "STABLE"
    assert member["previous_member_epoch"] == 0
    assert member["assignment"] == member["target"] == [["orders", 0], ["orders", 1]]
    assert member["subscription"] == ["orders"] and member["pending_revocation"] == []
