"""A bounded schemathesis run against the live ASGI app (issue 11): every operation of
``/openapi.json`` gets generated requests, valid and invalid, sent with a real API key;
no response may be a server error, and its status code, content type and body must be
ones the schema documents for that operation.

Each operation is driven by its own Hypothesis strategy (``as_strategy``) rather than
the schemathesis pytest plugin, whose lazy loader does not run on pytest 9.
"""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from memstack.embeddings import HashEmbedder
from memstack.transports.app import create_app
from memstack.wiring import Services, open_services

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
MAX_EXAMPLES = 20  # per operation and mode: 13 operations x 2 modes, well under a minute


@pytest.fixture
def fuzzed(tmp_path: Path) -> Iterator[Services]:
    services = open_services(
        store_url=f"sqlite:///{tmp_path / 'fuzz.db'}", redis_url=None, embedder=HashEmbedder()
    )
    yield services
    services.close()


@pytest.mark.parametrize("mode", ["positive", "negative"])
def test_every_response_is_as_documented(fuzzed: Services, mode: str) -> None:
    key = fuzzed.keys.create(tenant="fuzz")[0]
    schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(fuzzed))
    headers = {"Authorization": f"Bearer {key}"}
    operations = [_loaded(result) for result in schema.get_all_operations()]
    if mode == "negative":  # only an operation that takes input has invalid input
        operations = [o for o in operations if o.query or o.path_parameters or o.body]
    counts = {o.label: _fuzz(o, schemathesis.GenerationMode(mode), headers) for o in operations}
    print(f"\nschemathesis {mode}: {sum(counts.values())} cases, 0 failures")
    for label, count in counts.items():
        print(f"  {count:4d}  {label}")
    assert len(counts) >= 12 and all(counts.values())


def _loaded(result: object) -> Any:
    """The operation, or the reason schemathesis could not read it from the schema."""
    assert isinstance(result, Ok), result
    return result.ok()


def _fuzz(
    operation: Any,
    mode: schemathesis.GenerationMode,
    headers: dict[str, str],
) -> int:
    """How many generated cases of ``operation`` were sent and passed every check."""
    sent = 0

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Any) -> None:
        nonlocal sent
        case.call_and_validate(headers=headers, checks=CHECKS)
        sent += 1

    run()
    return sent
