"""A background HNSW build never outlives its store, nor the interpreter.

A daemon thread still inside the index's C++ code while Python finalizes is torn down
with ``pthread_exit``, which aborts the process (``terminate called without an active
exception``, exit status 134). ``VectorRows.close`` and an ``atexit`` hook stop and join
the build instead.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np

from memstack.storage._ann import ANN_MIN_ROWS
from memstack.storage._vector_rows import BackgroundBuild, VectorRows

_EXIT_DURING_A_BUILD = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    from memstack.embeddings.local import LocalEmbedder
    from memstack.storage import Record, SQLiteRecordStore

    store = SQLiteRecordStore(sys.argv[1])
    store.setup()
    rng = np.random.default_rng(0)
    rows, now = int(sys.argv[2]), time.time()
    for lo in range(0, rows, 10_000):
        vectors = rng.standard_normal((min(10_000, rows - lo), 384)).astype(np.float32)
        store.upsert([
            Record(id=f"r{lo + i}", namespace="big", text=f"row {lo + i}",
                   created_at=now, updated_at=now, embedding=vector)
            for i, vector in enumerate(vectors)
        ])
    assert not store.ready("big")  # the search below starts the background build
    store.vector_search("big", rng.standard_normal(384).astype(np.float32), k=10)
    LocalEmbedder().embed_batch(["and now exit at once"])
    print("exiting", flush=True)
    """
)


def test_a_process_that_exits_during_an_index_build_exits_cleanly(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _EXIT_DURING_A_BUILD, str(tmp_path / "big.db"), str(ANN_MIN_ROWS)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.stdout == "exiting\n"
    assert (done.returncode, done.stderr) == (0, "")


def test_close_stops_and_joins_a_build_in_progress() -> None:
    vectors: VectorRows[str] = VectorRows(16, ann_min_rows=1_000)
    data = np.random.default_rng(3).standard_normal((20_000, 16)).astype(np.float32)
    for i, row in enumerate(data):
        vectors.put(f"k{i}", row, None)
    vectors.search(data[0], 5)  # starts the build in the background
    build = vectors._building
    assert build is not None
    vectors.close()
    assert build.stopped.is_set()
    assert not build._thread.is_alive()
    assert build not in BackgroundBuild.running
    assert not vectors.ann_ready


def test_stop_all_stops_and_joins_every_build_in_progress() -> None:
    started = threading.Barrier(3)
    finished: list[bool] = []

    def work(stopped: threading.Event) -> None:
        started.wait()
        finished.append(stopped.wait(timeout=60))

    builds = [BackgroundBuild(work), BackgroundBuild(work)]
    for build in builds:
        build.start()
    started.wait()
    assert set(builds) <= BackgroundBuild.running
    BackgroundBuild.stop_all()
    assert finished == [True, True]  # both saw the stop; neither waited out its timeout
    assert not set(builds) & BackgroundBuild.running
