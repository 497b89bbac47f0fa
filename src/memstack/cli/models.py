"""``memstack models export|status``: bring a local embedding model, and see which model
each namespace of the server's store holds."""

from __future__ import annotations

from pathlib import Path

import click

from memstack.cli._store import db_option, echo_data_location, postgres_option, settings_from_env

__all__ = ["local_model_option", "models"]

local_model_option = click.option(
    "--local-model",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="A local embedding model folder (`memstack models export` makes one) instead of "
    "all-MiniLM-L6-v2 [env MEMSTACK_LOCAL_MODEL].",
)


@click.group()
def models() -> None:
    """Local embedding models: export a checkpoint, see each namespace's model."""


@models.command("export")
@click.argument("name_or_path")
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    required=True,
    help="The model folder to write (new or empty).",
)
@click.option("--int8", is_flag=True, help="Quantize the weights to int8: smaller and faster.")
def export_command(name_or_path: str, out: Path, int8: bool) -> None:
    """Turn a sentence-transformers checkpoint (a folder, or a name its library can
    load) into a model folder memstack runs with onnxruntime alone. Needs torch,
    sentence-transformers and onnx on this machine only: pip install 'memstack[export]'."""
    from memstack.embeddings.export import export_model

    click.echo(f"exporting {name_or_path} ...", err=True)
    done = export_model(name_or_path, out, int8=int8)
    model = done.model
    click.echo(
        f"wrote {done.folder}: {model.dim}-dimension vectors, {model.pooling} pooling, "
        f"up to {model.max_length} tokens, {'int8' if done.int8 else 'float32'} weights "
        f"({done.bytes / 1e6:.0f} MB); it finds texts as alike as the checkpoint does "
        f"(correlation {done.agreement:.3f}).\n"
        f"use it: MEMSTACK_LOCAL_MODEL={done.folder} memstack serve "
        f"(or --local-model {done.folder})"
    )


@models.command("status")
@db_option
@postgres_option
@local_model_option
def status_command(db: Path | None, postgres_url: str | None, local_model: Path | None) -> None:
    """Each namespace of the server's store with the model its vectors come from, and
    whether the configured model (MEMSTACK_LOCAL_MODEL, ...) can search it."""
    from memstack.embeddings import resolve_embedder
    from memstack.service.reembed import namespace_models
    from memstack.wiring import open_records

    settings = settings_from_env(db=db, postgres_url=postgres_url, local_model=local_model)
    echo_data_location(settings)
    embedder = resolve_embedder(settings.embedding)
    records = open_records(settings.store_url)
    try:
        spaces = namespace_models(records)
    finally:
        records.close()
    click.echo(f"configured model: {embedder.model_id}")
    stale = 0
    for space in spaces:
        mark = "" if space.model_id == embedder.model_id else "  (another model)"
        stale += bool(mark)
        click.echo(
            f"{space.namespace}  {space.model_id or '-'}  {space.dim}-d  "
            f"{space.records} records{mark}"
        )
    if stale:
        click.echo(
            f"{stale} namespace(s) hold another model's vectors: the server refuses to "
            "search or write them with the configured model. Stop it and run `memstack "
            "memories reembed` to embed them again.",
            err=True,
        )
