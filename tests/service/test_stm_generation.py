"""GenerationWatch: each Redis answer judged against the generation seen before it."""

from memstack.service.stm_generation import Generation, GenerationWatch


def test_an_answer_is_same_replaced_or_older_than_the_one_before_the_call():
    watch = GenerationWatch()
    assert watch.before("t") is None
    assert watch.after("t", None, Generation("a", 3)) == "same"  # nothing to compare with
    before = watch.before("t")
    assert before == Generation("a", 3)
    assert watch.after("t", before, Generation("a", 5)) == "same"
    assert watch.after("t", Generation("a", 5), Generation("b", 1)) == "replaced"
    assert watch.before("t") == Generation("b", 1)  # adopted
    assert watch.after("t", Generation("b", 1), Generation("b", 0)) == "older"


def test_a_late_reply_to_an_earlier_call_does_not_lower_what_is_remembered():
    watch = GenerationWatch()
    watch.after("t", None, Generation("a", 1))
    early = watch.before("t")
    watch.after("t", early, Generation("a", 7))  # the later call answered first
    assert watch.after("t", early, Generation("a", 4)) == "same"
    assert watch.before("t") == Generation("a", 7)


def test_at_most_max_tenants_are_remembered_the_least_recently_used_forgotten():
    watch = GenerationWatch(max_tenants=2)
    watch.after("a", None, Generation("x", 1))
    watch.adopt("b", Generation("y", 1))
    watch.after("a", watch.before("a"), Generation("x", 2))  # a is now the most recent
    watch.adopt("c", Generation("z", 1))  # adopting is bounded too
    assert watch.before("b") is None
    assert watch.before("a") == Generation("x", 2) and watch.before("c") == Generation("z", 1)
    watch.forget("a")
    assert watch.before("a") is None
