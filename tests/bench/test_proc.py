import os
import subprocess
import sys
import time

import pytest

from memstack.bench import proc

_BURN = "import time\nt = time.process_time() + 1.0\nwhile time.process_time() < t: pass\n"
_PARENT = (
    f"import subprocess, sys; subprocess.run([sys.executable, '-c', {_BURN!r} + 'time.sleep(60)'])"
)
needs_proc = pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs /proc")


@needs_proc
def test_the_proc_reading_follows_this_process_cpu_time():
    before = proc._proc_cpu_seconds(os.getpid())
    until = time.process_time() + 0.3
    while time.process_time() < until:
        sum(range(1000))
    assert proc._proc_cpu_seconds(os.getpid()) - before >= 0.2


@needs_proc
@pytest.mark.parametrize("psutil", ["installed", "missing"])
def test_cpu_seconds_counts_worker_processes(psutil: str, monkeypatch: pytest.MonkeyPatch):
    if psutil == "missing":
        monkeypatch.setitem(sys.modules, "psutil", None)
    parent = subprocess.Popen([sys.executable, "-c", _PARENT])
    try:
        deadline = time.monotonic() + 30
        while proc.cpu_seconds(parent.pid) < 0.9 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert proc.cpu_seconds(parent.pid) >= 0.9
        assert proc._proc_cpu_seconds(parent.pid) < 0.9  # the parent alone is idle
    finally:
        for pid in proc._proc_descendants(parent.pid):
            os.kill(pid, 9)
        parent.kill()
        parent.wait()


def test_rss_is_reported_and_memory_can_be_released():
    assert proc.rss_mb() > 1
    proc.release_memory()
    assert proc.rss_mb() > 1
