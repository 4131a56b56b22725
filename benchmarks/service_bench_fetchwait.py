"""``logstream worker`` with another consumer fetch wait: the latency benchmark's one experiment.

Faust creates its aiokafka consumer with ``fetch_max_wait_ms=1500``, fixed in
``faust/transport/drivers/aiokafka.py`` and not a setting. This script sets that argument of every
aiokafka consumer in its own process to ``BENCH_FETCH_MAX_WAIT_MS``, then runs the CLI exactly as
``python -m logstream.cli`` does. The library is unchanged. It only shows what the wait costs:

    BENCH_FETCH_MAX_WAIT_MS=100 python benchmarks/service_bench_fetchwait.py worker --bootstrap-servers ...
"""

from __future__ import annotations

import os
import runpy
import sys

import aiokafka

WAIT_MS = int(os.environ.get("BENCH_FETCH_MAX_WAIT_MS", "1500"))
_original_init = aiokafka.AIOKafkaConsumer.__init__


def _init(self, *args, **kwargs):
    if "fetch_max_wait_ms" in kwargs:
        kwargs["fetch_max_wait_ms"] = WAIT_MS
    _original_init(self, *args, **kwargs)


aiokafka.AIOKafkaConsumer.__init__ = _init

if __name__ == "__main__":
    sys.argv = ["logstream", *sys.argv[1:]]
    runpy.run_module("logstream.cli", run_name="__main__", alter_sys=True)
