"""``export_model``: a sentence-transformers checkpoint made into a model folder memstack
runs with onnxruntime alone (``embeddings/folder.py``), optionally with int8 weights.

Exporting needs torch, sentence-transformers and onnx (the ``export`` extra); running the
folder afterwards needs none of them, which is the point: the exporting machine pays
for torch once, every machine that serves the model does not. The transformer is
exported alone (token ids in, hidden states out); pooling and normalization stay in
memstack, read from ``memstack.json``. The folder is checked before it is kept: run by
memstack, it must find texts as alike as the checkpoint itself does.
"""

from __future__ import annotations

import importlib
import json
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from memstack.embeddings.folder import (
    DEFAULT_MAX_LENGTH,
    MANIFEST,
    MAX_POSITIONS,
    FolderModel,
    read_folder,
)
from memstack.errors import ConfigError

__all__ = ["EXPORT_HINT", "Exported", "export_model"]

EXPORT_HINT: Final = "pip install 'memstack[export]'"
_CHECK_TEXTS: Final = (
    "Bob moved from Lisbon to Berlin last spring.",
    "Where does Bob live?",
    "The quarterly report is due on Friday.",
    "When is the report due?",
    "I adopted a puppy named Max.",
    "Do you have any pets?",
    "Caroline went to a support group meeting.",
    "The stock market fell sharply today.",
)
_MIN_AGREEMENT: Final = 0.9
"""The lowest correlation accepted between the check texts' similarities to each other
under the exported folder and under the checkpoint. int8 weights shift every vector a
little the same way, which leaves how texts compare nearly as it was; a wrong export
(another pooling, a broken graph) compares them differently."""


@dataclass(frozen=True, kw_only=True)
class Exported:
    """What ``export_model`` wrote, and how closely it agrees with the checkpoint."""

    folder: Path
    model: FolderModel
    int8: bool
    bytes: int
    """The size of the ONNX file."""
    agreement: float
    """How alike the folder and the checkpoint find a few check texts to each other: the
    correlation of their pairwise similarities (1.0: the same)."""


def export_model(source: str, out: Path, *, int8: bool = False) -> Exported:
    """Export checkpoint ``source`` (a sentence-transformers folder, or a name its library
    can load) to the model folder ``out`` (created; must not hold a model already)."""
    torch, sentence_transformers = _export_libraries()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"{str(out)!r} is not empty; choose a new folder for the export.")
    try:
        model = sentence_transformers.SentenceTransformer(source, device="cpu")
    except Exception as exc:  # the library raises anything from OSError to ValueError
        raise ConfigError(f"sentence-transformers cannot load {source!r}: {exc}") from exc
    with tempfile.TemporaryDirectory(prefix="memstack-export-") as tmp:
        staged = Path(tmp)
        model.save(str(staged))
        _export_onnx(torch, model, staged / "exported.onnx")
        onnx_file = staged / "model.onnx"
        if int8:
            _quantize(staged / "exported.onnx", onnx_file)
        else:
            (staged / "exported.onnx").rename(onnx_file)
        folder = replace(read_folder(staged), max_length=_max_length(model))
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(onnx_file, out / "model.onnx")
        shutil.copyfile(folder.tokenizer_file, out / "tokenizer.json")
    _write_manifest(out, folder, source=source, int8=int8)
    written = read_folder(out)
    return Exported(
        folder=out,
        model=written,
        int8=int8,
        bytes=(out / "model.onnx").stat().st_size,
        agreement=_agreement(model, out),
    )


def _export_libraries() -> tuple[Any, Any]:
    """torch and sentence_transformers, or the extra to install (onnx is needed too)."""
    try:
        importlib.import_module("onnx")
        sentence_transformers = importlib.import_module("sentence_transformers")
        torch = importlib.import_module("torch")
    except ImportError as exc:
        raise ConfigError(
            f"memstack models export needs torch, sentence-transformers and onnx ({exc.name} "
            f"is missing): {EXPORT_HINT}. Only the exporting machine needs them."
        ) from exc
    return torch, sentence_transformers


def _hidden_states(torch: Any, transformer: Any, names: list[str]) -> Any:
    """The checkpoint's transformer as a module of positional tensors: what the ONNX
    exporter traces (token ids and mask in, last hidden states out). Defined here, as
    torch is imported only when exporting."""

    class HiddenStates(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, *inputs: Any) -> Any:
            return self.transformer(**dict(zip(names, inputs, strict=True)))[0]

    return HiddenStates().eval()


def _export_onnx(torch: Any, model: Any, path: Path) -> None:
    transformer = model[0].auto_model
    sample = model.tokenizer(list(_CHECK_TEXTS), padding=True, return_tensors="pt")
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in sample]
    axes = {name: {0: "batch", 1: "tokens"} for name in [*names, "last_hidden_state"]}
    with torch.no_grad():
        torch.onnx.export(
            _hidden_states(torch, transformer, names),
            tuple(sample[name] for name in names),
            str(path),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=17,
            do_constant_folding=True,
            dynamo=False,
        )


def _quantize(source: Path, target: Path) -> None:
    """int8 weights, activations quantized on the fly (onnxruntime's dynamic quantization),
    with one scale per output channel: one scale per whole matrix (the default) moved
    mpnet's vectors far from the checkpoint's, one per channel keeps their similarities.
    A fraction of the size, and several times faster on CPUs."""
    from onnxruntime.quantization import QuantType, quantize_dynamic  # type: ignore[import-untyped]

    quantize_dynamic(
        str(source),
        str(target),
        weight_type=QuantType.QInt8,
        per_channel=True,
        extra_options={"MatMulConstBOnly": True},
    )


def _max_length(model: Any) -> int:
    length = getattr(model, "max_seq_length", None)
    if isinstance(length, int) and length > 1:
        return min(length, MAX_POSITIONS)
    return DEFAULT_MAX_LENGTH


def _write_manifest(out: Path, folder: FolderModel, *, source: str, int8: bool) -> None:
    manifest = {
        "model_file": "model.onnx",
        "tokenizer_file": "tokenizer.json",
        "pooling": folder.pooling,
        "dim": folder.dim,
        "max_length": folder.max_length,
        "pad_id": folder.pad_id,
        "source": source,
        "int8": int8,
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def _agreement(model: Any, out: Path) -> float:
    """The correlation of the check texts' pairwise similarities under the exported folder
    and under the checkpoint; an export below ``_MIN_AGREEMENT`` is removed and refused."""
    import numpy as np

    from memstack.embeddings.local import LocalEmbedder

    ours = LocalEmbedder(folder=out, parallel=1).embed_batch(list(_CHECK_TEXTS))
    theirs = np.asarray(model.encode(list(_CHECK_TEXTS), normalize_embeddings=True))
    pairs = np.triu_indices(len(_CHECK_TEXTS), 1)
    agreement = float(np.corrcoef((ours @ ours.T)[pairs], (theirs @ theirs.T)[pairs])[0, 1])
    if not agreement >= _MIN_AGREEMENT:  # NaN too
        shutil.rmtree(out)
        raise ConfigError(
            f"the exported model compares texts unlike the checkpoint (correlation "
            f"{agreement:.3f} < {_MIN_AGREEMENT}); the export was removed. The checkpoint "
            "may need pooling memstack does not run."
        )
    return agreement
