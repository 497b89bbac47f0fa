"""MessageBus: direct messages, broadcast, read-once inboxes, unknown members."""

import pytest

from memstack.agents.team import MessageBus, TeamMessage
from memstack.clock import ManualClock
from memstack.errors import InvalidInput


def test_direct_message_is_delivered_once():
    bus = MessageBus(["ada", "bob"], clock=ManualClock(1_700_000_000.0))
    sent = bus.send(sender="ada", to="bob", content="research is done")
    assert sent == TeamMessage(
        sender="ada", to="bob", content="research is done", sent_at=1_700_000_000_000
    )
    assert bus.unread_count("bob") == 1 and bus.unread_count("ada") == 0
    assert bus.inbox("bob") == [sent]
    assert bus.inbox("bob") == []


def test_broadcast_reaches_everyone_but_the_sender():
    bus = MessageBus(["ada", "bob"])
    bus.register("cy")
    bus.register("cy")  # harmless
    message = bus.send(sender="ada", to="*", content="hello team")
    assert [bus.unread_count(n) for n in ("ada", "bob", "cy")] == [0, 1, 1]
    assert bus.inbox("cy") == [message] and message.to == "*"
    assert bus.members == ["ada", "bob", "cy"]


def test_messages_keep_their_order():
    bus = MessageBus(["ada", "bob"])
    for text in ("one", "two", "three"):
        bus.send(sender="ada", to="bob", content=text)
    assert [m.content for m in bus.inbox("bob")] == ["one", "two", "three"]


@pytest.mark.parametrize(
    ("sender", "to", "content", "message"),
    [
        (
            "ada",
            "zed",
            "hi",
            r"'zed' is not a member of the team; the members are 'ada', 'bob' \(or",
        ),
        ("zed", "ada", "hi", "'zed' is not a member"),
        ("ada", "bob", " ", "content must be a non-empty string"),
    ],
)
def test_bad_sends_are_refused(sender: str, to: str, content: str, message: str):
    bus = MessageBus(["ada", "bob"])
    with pytest.raises(InvalidInput, match=message):
        bus.send(sender=sender, to=to, content=content)
    assert bus.unread_count("ada") == bus.unread_count("bob") == 0


@pytest.mark.parametrize("name", ["", "*"])
def test_bad_member_names_are_refused(name: str):
    with pytest.raises(InvalidInput, match="member name"):
        MessageBus([name])


def test_inbox_of_a_stranger_is_refused():
    with pytest.raises(InvalidInput, match="'zed' is not a member"):
        MessageBus(["ada"]).inbox("zed")
