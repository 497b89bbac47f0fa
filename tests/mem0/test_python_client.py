"""mem0's Python client (``mem0.MemoryClient``, PyPI mem0ai) against a live ``memstack
serve``, through every method a program calls: what it writes, it reads back; one user's
memories never reach another user's results; a deleted memory is gone for ``get``; filters
select what they say."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from mem0.exceptions import MemoryNotFoundError
from mem0.memory import setup as mem0_setup
from mem0.memory import telemetry as mem0_telemetry

from tests.mem0.conftest import MEM0_DIR, Mem0Server, name

CONVERSATION = [
    {"role": "user", "content": "I am vegetarian and allergic to peanuts."},
    {"role": "assistant", "content": "Noted: vegetarian meals, never peanuts."},
]
"""The two messages, stored verbatim with ``infer=False``."""
OLD = 1_700_000_000
"""2023-11-14, a time an add may give (``timestamp``) to date a memory."""


def ids(page: dict[str, Any]) -> set[str]:
    return {m["id"] for m in page["results"]}


def texts(page: dict[str, Any]) -> set[str]:
    return {m["memory"] for m in page["results"]}


def add(client: Any, text: str, **kwargs: Any) -> dict[str, Any]:
    """One user message stored verbatim; the memory the add answered with."""
    done = client.add([{"role": "user", "content": text}], infer=False, **kwargs)
    assert [r["event"] for r in done["results"]] == ["ADD"], done
    memory: dict[str, Any] = done["results"][0]
    return memory


def test_mem0_imports_with_telemetry_off_and_its_files_in_a_temporary_folder(
    server: Mem0Server,
) -> None:
    with server.client() as client:
        assert (client.org_id, client.project_id, client.user_email) == ("default", "default", None)
    assert mem0_telemetry.MEM0_TELEMETRY is False
    assert mem0_telemetry.client_telemetry.posthog is None  # no PostHog client, no thread
    assert mem0_setup.mem0_dir == str(MEM0_DIR)
    assert (MEM0_DIR / "config.json").is_file()
    # mem0.client.main turns DeprecationWarning to "default" when imported: that must not
    # outlive the import, or the suite's filterwarnings = error would stop catching them.
    with pytest.raises(DeprecationWarning):
        warnings.warn("still an error", DeprecationWarning, stacklevel=1)


def test_ping_answers_the_keys_tenant(server: Mem0Server) -> None:
    with server.raw() as http:
        pinged = http.get("/v1/ping/")
    assert pinged.status_code == 200
    assert pinged.json() == {
        "status": "ok",
        "org_id": "default",
        "project_id": "default",
        "user_email": None,
    }


def test_add_stores_the_messages_verbatim_with_their_metadata(server: Mem0Server) -> None:
    alice = name("alice")
    with server.client() as client:
        done = client.add(CONVERSATION, user_id=alice, infer=False, metadata={"topic": "food"})
        assert [r["event"] for r in done["results"]] == ["ADD", "ADD"]
        assert [r["memory"] for r in done["results"]] == [m["content"] for m in CONVERSATION]
        for made in done["results"]:
            got = client.get(made["id"])
            assert got["id"] == made["id"]
            assert got["memory"] == made["memory"]
            assert got["user_id"] == alice
            assert got["metadata"] == {"topic": "food"}
            assert got["created_at"] and got["updated_at"]
        assert texts(client.get_all(filters={"user_id": alice})) == {
            m["content"] for m in CONVERSATION
        }


def test_add_answers_the_times_get_answers(server: Mem0Server) -> None:
    """The memory an add answers with is the one stored: its times are not the time the
    answer was written."""
    with server.client() as client:
        made = add(client, "I keep bees on the roof.", user_id=name("ines"))
        got = client.get(made["id"])
    assert (made["created_at"], made["updated_at"]) == (got["created_at"], got["updated_at"])


def test_one_users_memories_never_reach_anothers_results(server: Mem0Server) -> None:
    alice, bob = name("alice"), name("bob")
    with server.client() as client:
        client.add(CONVERSATION, user_id=alice, infer=False)
        bobs = add(client, "Bob is vegetarian too and hikes on peanuts.", user_id=bob)
        for query in ("vegetarian peanuts", "Bob hikes", "What are my dietary restrictions?"):
            found = client.search(
                query, filters={"user_id": alice}, top_k=10, threshold=0.0, rerank=True
            )
            assert found["results"], query
            assert {m["user_id"] for m in found["results"]} == {alice}, query
            assert bobs["id"] not in ids(found)
            assert all(isinstance(m["score"], float) for m in found["results"])
        listed = client.get_all(filters={"user_id": alice})
        assert {m["user_id"] for m in listed["results"]} == {alice}
        assert listed["count"] == 2
        assert ids(client.get_all(filters={"user_id": bob})) == {bobs["id"]}


def test_search_honours_top_k_and_threshold(server: Mem0Server) -> None:
    carol = name("carol")
    with server.client() as client:
        for n in range(4):
            add(client, f"Carol's note {n} about gardening tomatoes.", user_id=carol)
        best = client.search("gardening tomatoes", filters={"user_id": carol}, threshold=0.0)
        assert len(best["results"]) == 4
        scores = [m["score"] for m in best["results"]]
        assert scores == sorted(scores, reverse=True)
        top = client.search(
            "gardening tomatoes", filters={"user_id": carol}, top_k=2, threshold=0.0
        )
        assert [m["id"] for m in top["results"]] == [m["id"] for m in best["results"][:2]]
        above = client.search("gardening tomatoes", filters={"user_id": carol}, threshold=scores[1])
        assert ids(above) == {m["id"] for m in best["results"][:2]}
        assert client.search("gardening", filters={"user_id": carol}, threshold=1.0) == {
            "results": []
        }


def test_get_all_pages_through_every_memory(server: Mem0Server) -> None:
    dora = name("dora")
    with server.client() as client:
        made = {add(client, f"Dora's fact number {n}.", user_id=dora)["id"] for n in range(5)}
        first = client.get_all(filters={"user_id": dora}, page=1, page_size=2)
        assert first["count"] == 5
        assert first["previous"] is None and first["next"] is not None
        assert len(first["results"]) == 2
        second = client.get_all(filters={"user_id": dora}, page=2, page_size=2)
        last = client.get_all(filters={"user_id": dora}, page=3, page_size=2)
        assert second["previous"] is not None and second["next"] is not None
        assert last["next"] is None and last["previous"] is not None
        assert len(last["results"]) == 1
        seen = [m["id"] for page in (first, second, last) for m in page["results"]]
        assert len(seen) == 5 and set(seen) == made
        assert ids(client.get_all(filters={"user_id": dora})) == made


def test_update_history_and_delete(server: Mem0Server) -> None:
    erin = name("erin")
    with server.client() as client:
        made = add(client, "My favourite colour is green.", user_id=erin)
        mid = made["id"]
        changed = client.update(mid, text="My favourite colour is blue.")
        assert changed["memory"] == "My favourite colour is blue."
        tagged = client.update(mid, metadata={"kind": "preference"})
        assert tagged["memory"] == "My favourite colour is blue."
        assert tagged["metadata"] == {"kind": "preference"}
        got = client.get(mid)
        assert (got["memory"], got["metadata"]) == (
            "My favourite colour is blue.",
            {"kind": "preference"},
        )
        assert client.delete(mid)["message"]
        events = client.history(mid)
        assert [e["event"] for e in events] == ["ADD", "UPDATE", "DELETE"]
        assert [(e["old_memory"], e["new_memory"]) for e in events] == [
            (None, "My favourite colour is green."),
            ("My favourite colour is green.", "My favourite colour is blue."),
            ("My favourite colour is blue.", None),
        ]
        for e in events:
            assert e["memory_id"] == mid and e["user_id"] == erin
            assert e["id"] and e["created_at"] and e["updated_at"]
        with pytest.raises(MemoryNotFoundError):
            client.get(mid)
        assert client.get_all(filters={"user_id": erin})["count"] == 0
        found = client.search("favourite colour", filters={"user_id": erin}, threshold=0.0)
        assert found["results"] == []


def test_an_updated_memory_keeps_its_id(server: Mem0Server) -> None:
    """mem0's memory has one id for life: a program that kept the id an add answered
    finds the memory under it in get, get_all and search after an update."""
    with server.client() as client:
        fred = name("fred")
        mid = add(client, "I drink tea.", user_id=fred)["id"]
        changed = client.update(mid, text="I drink coffee.")
        assert changed["id"] == mid
        assert client.get(mid)["id"] == mid
        assert ids(client.get_all(filters={"user_id": fred})) == {mid}
        found = client.search("coffee", filters={"user_id": fred}, threshold=0.0)
        assert ids(found) == {mid}


def test_delete_all_of_one_user_leaves_the_other_user_whole(server: Mem0Server) -> None:
    gina, hugo = name("gina"), name("hugo")
    with server.client() as client:
        client.add(CONVERSATION, user_id=gina, infer=False)
        hugos = client.add(CONVERSATION, user_id=hugo, infer=False)
        kept = {r["id"] for r in hugos["results"]}
        assert client.delete_all(user_id=gina)["message"]
        assert client.get_all(filters={"user_id": gina})["count"] == 0
        assert client.search("vegetarian", filters={"user_id": gina}, threshold=0.0) == {
            "results": []
        }
        assert ids(client.get_all(filters={"user_id": hugo})) == kept
        for mid in kept:
            assert client.get(mid)["user_id"] == hugo


def test_batch_update_and_batch_delete(server: Mem0Server) -> None:
    ivan = name("ivan")
    with server.client() as client:
        a, b, c = (add(client, f"Ivan's memory {n}.", user_id=ivan)["id"] for n in "abc")
        assert client.batch_update(
            [
                {"memory_id": a, "text": "Ivan's memory a, rewritten."},
                {"memory_id": b, "metadata": {"batch": True}},
            ]
        )["message"]
        assert client.get(a)["memory"] == "Ivan's memory a, rewritten."
        assert client.get(b)["metadata"] == {"batch": True}
        assert client.get(b)["memory"] == "Ivan's memory b."
        assert client.batch_delete([{"memory_id": a}, {"memory_id": b}])["message"]
        for gone in (a, b):
            with pytest.raises(MemoryNotFoundError):
                client.get(gone)
        assert texts(client.get_all(filters={"user_id": ivan})) == {"Ivan's memory c."}
        assert client.get(c)["memory"] == "Ivan's memory c."


def test_users_lists_every_user_and_agent_with_its_count(server: Mem0Server) -> None:
    jane, agent = name("jane"), name("agent")
    with server.client() as client:
        client.add(CONVERSATION, user_id=jane, infer=False)
        add(client, "The deploy window is 21:00 UTC.", agent_id=agent)
        listed = client.users()
    assert listed["count"] == len(listed["results"])
    found = {(e["type"], e["name"]): e for e in listed["results"]}
    assert found[("user", jane)]["total_memories"] == 2
    assert found[("agent", agent)]["total_memories"] == 1
    for entity in (found[("user", jane)], found[("agent", agent)]):
        assert entity["id"] == entity["name"]
        assert entity["owner"] == "default"


def test_agent_memories_without_a_user(server: Mem0Server) -> None:
    bot, other, kim = name("bot"), name("bot"), name("kim")
    with server.client() as client:
        made = add(client, "The deploy runs at 9pm on Fridays.", agent_id=bot, metadata={"k": 1})
        add(client, "The other bot deploys at noon.", agent_id=other)
        add(client, "Kim deploys nothing.", user_id=kim)
        assert made["agent_id"] == bot and made["user_id"] is None
        found = client.search("deploy", filters={"agent_id": bot}, threshold=0.0)
        assert ids(found) == {made["id"]}
        assert found["results"][0]["metadata"] == {"k": 1}
        assert ids(client.get_all(filters={"agent_id": bot})) == {made["id"]}
        assert made["id"] not in ids(
            client.search("deploy", filters={"user_id": kim}, threshold=0.0)
        )
        assert client.get(made["id"])["memory"] == "The deploy runs at 9pm on Fridays."
        client.update(made["id"], text="The deploy runs at 10pm on Fridays.")
        assert texts(client.get_all(filters={"agent_id": bot})) == {
            "The deploy runs at 10pm on Fridays."
        }
        client.delete_all(agent_id=bot)
        assert client.get_all(filters={"agent_id": bot})["count"] == 0
        assert client.get_all(filters={"agent_id": other})["count"] == 1


def test_filters_select_what_they_say(server: Mem0Server) -> None:
    lena, mark = name("lena"), name("mark")
    with server.client() as client:
        food = add(client, "Lena cooks lentils.", user_id=lena, metadata={"topic": "food"})
        trip = add(client, "Lena flies to Oslo.", user_id=lena, metadata={"topic": "travel"})
        work = add(client, "Lena writes reports.", user_id=lena, metadata={"topic": "work"})
        old = add(client, "Lena lived in Rome.", user_id=lena, metadata={"topic": "travel"},
                  timestamp=OLD)  # fmt: skip
        marks = add(client, "Mark cooks lentils.", user_id=mark, metadata={"topic": "food"})

        def listed(filters: dict[str, Any]) -> set[str]:
            return ids(client.get_all(filters=filters))

        def searched(filters: dict[str, Any]) -> set[str]:
            return ids(client.search("Lena lentils Oslo", filters=filters, threshold=0.0))

        everyone = {food["id"], trip["id"], work["id"], old["id"], marks["id"]}
        lenas = everyone - {marks["id"]}
        assert listed({"user_id": lena}) == lenas
        assert listed({"OR": [{"user_id": lena}, {"user_id": mark}]}) == everyone
        assert listed({"user_id": {"in": [lena, mark]}}) == everyone
        food_only = {"AND": [{"user_id": lena}, {"metadata": {"topic": "food"}}]}
        assert listed(food_only) == searched(food_only) == {food["id"]}
        moved = {"AND": [{"user_id": lena}, {"metadata": {"topic": {"in": ["travel", "food"]}}}]}
        assert listed(moved) == {food["id"], trip["id"], old["id"]}
        recent = {"AND": [{"user_id": lena}, {"created_at": {"gte": "2024-01-01"}}]}
        assert listed(recent) == searched(recent) == {food["id"], trip["id"], work["id"]}
        before = {"AND": [{"user_id": lena}, {"created_at": {"lt": "2024-01-01T00:00:00Z"}}]}
        assert listed(before) == {old["id"]}
        travel_now = {
            "AND": [
                {"user_id": {"in": [lena, mark]}},
                {"OR": [{"metadata": {"topic": "travel"}}, {"metadata": {"topic": "food"}}]},
                {"created_at": {"gte": OLD + 1}},
            ]
        }
        assert listed(travel_now) == {food["id"], trip["id"], marks["id"]}
        assert listed({"AND": [{"user_id": lena}, {"NOT": {"metadata": {"topic": "work"}}}]}) == (
            lenas - {work["id"]}
        )


def test_metadata_compares_numbers(server: Mem0Server) -> None:
    """mem0's filters compare metadata numbers (gte, lt), as its own store does."""
    nora = name("nora")
    with server.client() as client:
        low = add(client, "Nora's low-priority task.", user_id=nora, metadata={"priority": 1})
        high = add(client, "Nora's urgent task.", user_id=nora, metadata={"priority": 5})
        urgent = {"AND": [{"user_id": nora}, {"metadata": {"priority": {"gte": 3}}}]}
        assert ids(client.get_all(filters=urgent)) == {high["id"]}
        calm = {"AND": [{"user_id": nora}, {"metadata": {"priority": {"lt": 3}}}]}
        assert ids(client.get_all(filters=calm)) == {low["id"]}
