"""A local embedding model brought as a folder: what to run and how, read from its files.

A folder is either what ``memstack models export`` writes (``memstack.json`` names every
file and setting) or a sentence-transformers checkpoint with an ONNX export beside it:

- the model: ``model.onnx``, else the one ``.onnx`` file of the folder, else
  ``onnx/model.onnx``, else the one ``.onnx`` file of ``onnx/``;
- ``tokenizer.json`` (the Hugging Face tokenizers format);
- the pooling: the ``Pooling`` module that ``modules.json`` lists (by default
  ``1_Pooling/config.json``), mean or CLS, in either format sentence-transformers has
  written (``pooling_mode_mean_tokens: true``, or ``pooling_mode: "mean"``);
- the dimension: the pooling's ``word_embedding_dimension`` (``embedding_dimension``),
  else ``config.json``'s ``hidden_size``; the longest input:
  ``sentence_bert_config.json``'s ``max_seq_length`` (256 when it has none).

Vectors are always L2-normalized (every memstack embedder returns unit rows), so a
``Normalize`` module changes nothing. A module that changes the vector after pooling
(``Dense``) cannot be run here: the folder is refused, naming it. Only the small JSON
files are read here; the model file loads on first use (``LocalEmbedder``).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

from memstack.errors import ConfigError

__all__ = [
    "DEFAULT_MAX_LENGTH",
    "MANIFEST",
    "MAX_POSITIONS",
    "FolderModel",
    "Pooling",
    "file_digest",
    "read_folder",
]

Pooling: TypeAlias = Literal["mean", "cls"]
MANIFEST: Final = "memstack.json"
"""The file ``memstack models export`` writes: the folder's files and settings."""
DEFAULT_MAX_LENGTH: Final = 256
MAX_POSITIONS: Final = 512
"""The longest input a BERT-like model's position table holds."""
_PASSIVE_MODULES: Final = ("Transformer", "Pooling", "Normalize")
"""sentence-transformers modules a folder may list: the model, the pooling done here, and
a normalization every memstack embedder does anyway."""


@dataclass(frozen=True, kw_only=True)
class FolderModel:
    """What ``LocalEmbedder`` runs for a folder, and how."""

    folder: Path
    model_file: Path
    tokenizer_file: Path
    pooling: Pooling
    dim: int
    max_length: int
    """Tokens kept of a text (the model's own limit); the rest is cut off."""
    pad_id: int
    """The token id batches are padded with (MPNet's is 1, BERT's 0): some models derive
    positions from it."""


def read_folder(path: str | os.PathLike[str]) -> FolderModel:
    """The model of folder ``path``, or ``ConfigError`` naming what is missing or wrong."""
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise ConfigError(
            f"local model folder {str(folder)!r} does not exist or is not a folder; point "
            "MEMSTACK_LOCAL_MODEL (or --local-model) at a folder made by `memstack models "
            "export`, or at a sentence-transformers folder with an ONNX export."
        )
    if (folder / MANIFEST).is_file():
        return _from_manifest(folder)
    return _from_sentence_transformers(folder)


def file_digest(path: Path) -> str:
    """The sha256 of the file at ``path`` (read in blocks: models are hundreds of MB)."""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as file:
            while block := file.read(1 << 20):
                digest.update(block)
    except OSError as exc:
        raise ConfigError(f"cannot read the model file {str(path)!r}: {exc}.") from exc
    return digest.hexdigest()


def _from_manifest(folder: Path) -> FolderModel:
    manifest = _json(folder / MANIFEST)
    where = f"{folder / MANIFEST}"
    return FolderModel(
        folder=folder,
        model_file=_present(folder / str(manifest.get("model_file", "model.onnx")), where),
        tokenizer_file=_present(
            folder / str(manifest.get("tokenizer_file", "tokenizer.json")), where
        ),
        pooling=_pooling_name(manifest.get("pooling"), where),
        dim=_whole(manifest.get("dim"), "dim", where),
        max_length=_max_length(manifest.get("max_length", DEFAULT_MAX_LENGTH), where),
        pad_id=_whole(manifest.get("pad_id", 0), "pad_id", where, low=0),
    )


def _from_sentence_transformers(folder: Path) -> FolderModel:
    tokenizer = folder / "tokenizer.json"
    if not tokenizer.is_file():
        raise ConfigError(
            f"local model folder {str(folder)!r} has no tokenizer.json; memstack reads the "
            "tokenizer from it (the Hugging Face tokenizers format). Copy it from the "
            "checkpoint, or make the folder with `memstack models export`."
        )
    pooling_file = _pooling_file(folder)
    pooling = _json(pooling_file)
    config = _json(folder / "config.json") if (folder / "config.json").is_file() else {}
    st_config = folder / "sentence_bert_config.json"
    max_length = _json(st_config).get("max_seq_length") if st_config.is_file() else None
    dim = pooling.get(
        "word_embedding_dimension", pooling.get("embedding_dimension", config.get("hidden_size"))
    )
    return FolderModel(
        folder=folder,
        model_file=_onnx_file(folder),
        tokenizer_file=tokenizer,
        pooling=_st_pooling(pooling, pooling_file),
        dim=_whole(dim, "word_embedding_dimension (or hidden_size)", str(pooling_file)),
        max_length=_max_length(max_length or DEFAULT_MAX_LENGTH, str(st_config)),
        pad_id=_pad_id(tokenizer, config),
    )


def _onnx_file(folder: Path) -> Path:
    """``model.onnx``, else the only ONNX file, of the folder and then of ``onnx/``."""
    for place in (folder, folder / "onnx"):
        if (place / "model.onnx").is_file():
            return place / "model.onnx"
        found = sorted(place.glob("*.onnx")) if place.is_dir() else []
        if len(found) == 1:
            return found[0]
        if found:
            raise ConfigError(
                f"{str(place)!r} holds several ONNX files ({', '.join(f.name for f in found)}) "
                "and none is model.onnx; keep the one to run, or rename it model.onnx."
            )
    raise ConfigError(
        f"local model folder {str(folder)!r} has no ONNX model (model.onnx, or one .onnx "
        "file in it or in onnx/); a sentence-transformers checkpoint needs exporting first: "
        f"memstack models export {str(folder)!r} --out FOLDER --int8"
    )


def _pooling_file(folder: Path) -> Path:
    """The pooling config ``modules.json`` points at (``1_Pooling/config.json`` without
    one); a module memstack cannot run is refused here."""
    path = "1_Pooling"
    if (folder / "modules.json").is_file():
        modules = _json_list(folder / "modules.json")
        kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
        extra = [kind for kind in kinds if kind not in _PASSIVE_MODULES]
        if extra:
            raise ConfigError(
                f"local model folder {str(folder)!r} lists {', '.join(extra)} in "
                "modules.json; memstack runs Transformer, Pooling and Normalize only. "
                "Choose a model without them."
            )
        pools = [
            str(m.get("path", "")) for m, k in zip(modules, kinds, strict=True) if k == "Pooling"
        ]
        path = pools[0] if pools else path
    config = folder / path / "config.json"
    if not config.is_file():
        raise ConfigError(
            f"local model folder {str(folder)!r} has no pooling config {str(config)!r}; "
            "memstack reads mean or CLS pooling from it (a sentence-transformers folder "
            "has one), or make the folder with `memstack models export`."
        )
    return config


def _st_pooling(config: dict[str, Any], where: Path) -> Pooling:
    modes = sorted(
        k.removeprefix("pooling_mode_")
        for k, v in config.items()
        if k.startswith("pooling_mode_") and v is True
    )
    if isinstance(config.get("pooling_mode"), str):
        modes = [str(config["pooling_mode"])]
    if modes in (["mean_tokens"], ["mean"]):
        return "mean"
    if modes in (["cls_token"], ["cls"]):
        return "cls"
    raise ConfigError(
        f"{str(where)!r} asks for pooling {' + '.join(modes) or 'none'}; memstack pools by "
        "mean or CLS token only."
    )


def _pad_id(tokenizer: Path, config: dict[str, Any]) -> int:
    padding = _json(tokenizer).get("padding")
    if isinstance(padding, dict) and isinstance(padding.get("pad_id"), int):
        return int(padding["pad_id"])
    pad = config.get("pad_token_id")
    return pad if isinstance(pad, int) and pad >= 0 else 0


def _pooling_name(value: object, where: str) -> Pooling:
    if value == "mean" or value == "cls":
        return value
    raise ConfigError(f'{where}: pooling is {value!r}; write "mean" or "cls".')


def _max_length(value: object, where: str) -> int:
    return min(_whole(value, "max_length", where, low=2), MAX_POSITIONS)


def _whole(value: object, name: str, where: str, *, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"{where}: {name} is {value!r}; it must be a whole number >= {low}.")
    return value


def _present(path: Path, where: str) -> Path:
    if not path.is_file():
        raise ConfigError(f"{where} names {path.name!r}, but {str(path)!r} is missing.")
    return path


def _json(path: Path) -> dict[str, Any]:
    value = _load(path)
    if not isinstance(value, dict):
        raise ConfigError(f"{str(path)!r} holds no JSON object.")
    return value


def _json_list(path: Path) -> list[dict[str, Any]]:
    value = _load(path)
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise ConfigError(f"{str(path)!r} holds no JSON list of modules.")
    return value


def _load(path: Path) -> object:
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read {str(path)!r}: {exc}.") from exc
