"""A flood of new stream keys in a full cache: every forgotten window is counted, the warning comes
once a minute at most (not with every batch), and the engine's memory stays what its pool holds."""

from __future__ import annotations

import logging

from logstream.config import Settings
from logstream.service.metrics import CACHE_FORGOTTEN
from logstream.service.model_worker import EntryMeta, ModelWorker
from service_helpers import model_dir_or_skip


def test_forgetting_under_a_flood_of_keys_is_counted_and_warned_of_once(tmp_path, caplog):
    settings = Settings(model={"path": model_dir_or_skip(), "threads": 1}, cache={"pool_bytes": 4 << 20},
                        adapt={"enabled": False}, worker={"data_dir": str(tmp_path)})
    model = ModelWorker(settings)
    try:
        before = CACHE_FORGOTTEN._value.get()
        line = "2026-12-03T10:00:00Z INFO request {} served in 12 ms status=200"
        with caplog.at_level(logging.WARNING, logger="logstream.model_worker"):
            for batch in range(12):  # 768 new keys, one line each: far more than the pool's pages
                model._score([(f"request-{batch}-{i}", line.format(i), EntryMeta()) for i in range(64)])
        stats = model.scorer.engine.stats()
        assert stats.forgotten > 300 and CACHE_FORGOTTEN._value.get() - before == stats.forgotten
        assert stats.streams_resident <= stats.slots  # a stream holds a page at least: no more than the pool
        warnings = [r.getMessage() for r in caplog.records if "stream windows forgotten" in r.getMessage()]
        assert len(warnings) == 1 and "at most one such warning a minute" in warnings[0]
    finally:
        model.close()
