"""The cpu backend keeps freed host memory for reuse (backends/cpu/host_memory.py): a step that frees and
allocates the same sizes again touches no fresh pages, where glibc's defaults fault them all in anew."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

STEPS = """
import resource
import ember

def step():
    blocks = [ember.ones(256, 1024) for _ in range(8)]      # 1 MiB each, then all freed
    del blocks

for _ in range(3):
    step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    step()
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20)
"""


def faults_per_step(**env) -> float:
    done = subprocess.run([sys.executable, "-c", STEPS], capture_output=True, text=True, check=True,
                          env={**os.environ, **env})
    return float(done.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc is the one tuned")
def test_freed_blocks_are_reused_not_faulted_in_again():
    from ember_cpu.host_memory import keep_freed_memory

    assert keep_freed_memory()
    tuned, untuned = faults_per_step(), faults_per_step(EMBER_CPU_KEEP_FREED_MEMORY="0")
    assert tuned < 50, tuned                  # 8 MiB allocated per step: 2048 pages
    assert untuned > 1000, untuned            # glibc's defaults: the heap's top is trimmed, pages fault again
