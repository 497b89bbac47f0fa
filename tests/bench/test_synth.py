import numpy as np
import pytest

from memstack.bench.floor import exact_top, recall_at_k
from memstack.bench.synth import (
    DETAILS,
    SUBJECTS,
    TOPICS,
    VERBS,
    Phrases,
    embed_phrases,
    synth_queries,
    synth_rows,
    synth_sentences,
)
from memstack.embeddings import HashEmbedder


@pytest.fixture(scope="module")
def phrases() -> Phrases:
    return embed_phrases(HashEmbedder(dim=64))


def test_the_vocabulary_is_wide_enough_to_rank():
    assert len(TOPICS) >= 40 and len(SUBJECTS) >= 15 and len(VERBS) >= 15
    assert len(DETAILS) >= 20
    assert len(set(TOPICS)) == len(TOPICS)


def test_phrase_vectors_are_one_per_phrase(phrases: Phrases):
    assert phrases.topics.shape == (len(TOPICS), 64)
    assert phrases.subjects.shape == (len(SUBJECTS), 64)
    assert phrases.dim == 64


def test_synthesized_vectors_are_unit_length_and_deterministic(phrases: Phrases):
    rows = synth_rows(phrases, 0, 2500, seed=3)
    assert rows.vectors.shape == (2500, 64) and rows.vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(rows.vectors, axis=1), 1.0, atol=1e-5)
    again = synth_rows(phrases, 0, 2500, seed=3)
    assert np.array_equal(rows.vectors, again.vectors)
    assert rows.texts() == again.texts()
    other = synth_rows(phrases, 0, 2500, seed=4)
    assert not np.array_equal(rows.vectors, other.vectors)


def test_a_row_is_the_same_however_the_rows_are_asked_for(phrases: Phrases):
    whole = synth_rows(phrases, 0, 2500)
    part = synth_rows(phrases, 990, 1010)
    assert np.array_equal(part.vectors, whole.vectors[990:1010])
    assert part.texts() == whole.texts()[990:1010]
    assert part.texts()[0].endswith("(note 990)")
    assert len(synth_rows(phrases, 5, 5).vectors) == 0


def test_a_vector_leans_towards_its_topic(phrases: Phrases):
    rows = synth_rows(phrases, 0, 500)
    own = np.sum(rows.vectors * phrases.topics[rows.parts[:, 2]], axis=1)
    other = np.sum(rows.vectors * phrases.topics[(rows.parts[:, 2] + 1) % len(TOPICS)], axis=1)
    assert float(np.mean(own)) > float(np.mean(other)) + 0.2


def test_texts_and_queries_are_deterministic_and_distinct():
    assert synth_sentences(300) == synth_sentences(300)
    assert len(set(synth_sentences(300))) == 300
    assert synth_queries(20) == synth_queries(20)
    assert len(set(synth_queries(200))) > 150


def test_recall_at_k_against_the_exact_ranking(phrases: Phrases):
    matrix = synth_rows(phrases, 0, 300).vectors
    query = matrix[7]
    best = [int(i) for i in exact_top(matrix, query, 10)]
    assert best[0] == 7
    assert recall_at_k(best, matrix, query, 10) == 1.0
    worst = [int(i) for i in np.argsort(matrix @ query)[:10]]
    assert recall_at_k(worst, matrix, query, 10) == 0.0
    assert recall_at_k(best[:5] + worst[:5], matrix, query, 10) == 0.5
