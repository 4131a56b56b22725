"""Log templates with drain3: masking rules shared by training, scoring and the baselines.

Variable fields (block ids, IPs, hex ids, paths, numbers) are masked before mining, so that
``Receiving block blk_123 src: /10.0.0.1:50010`` and ``... blk_456 src: /10.0.0.2:50010`` share
one template.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from drain3 import TemplateMiner
from drain3.masking import MaskingInstruction
from drain3.template_miner_config import TemplateMinerConfig

# Order matters: specific patterns first.
DEFAULT_MASKS: tuple[tuple[str, str], ...] = (
    (r"blk_-?\d+", "BLK"),
    (r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b", "IP"),
    (r"\b0x[0-9a-fA-F]+\b", "HEX"),
    (r"\b(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}\b", "HEX"),  # not plain numbers: those are NUM
    (r"(?<![\w.])/(?:[\w.\-$]+/)+[\w.\-$]*", "PATH"),
    (r"(?<![A-Za-z])[-+]?\d+(?:\.\d+)?(?![A-Za-z])", "NUM"),
)


def mask_line(line: str, masks: tuple[tuple[str, str], ...] = DEFAULT_MASKS) -> str:
    """The line with variable fields replaced by <NAME> placeholders (same rules as the miner)."""
    for pattern, name in masks:
        line = re.sub(pattern, f"<{name}>", line)
    return line


@dataclass
class TemplateMatch:
    template_id: int
    template: str
    known: bool  # the template existed before this line (was seen while fitting)


class Templates:
    """A drain3 miner with logstream's masks. ``fit`` on normal lines, then ``match`` new ones."""

    def __init__(self, masks: tuple[tuple[str, str], ...] = DEFAULT_MASKS, similarity: float = 0.4,
                 depth: int = 4):
        config = TemplateMinerConfig()
        config.masking_instructions = [MaskingInstruction(p, n) for p, n in masks]
        config.drain_sim_th = similarity
        config.drain_depth = depth
        config.profiling_enabled = False
        self.miner = TemplateMiner(config=config)
        self.counts: dict[int, int] = {}

    def fit(self, lines) -> "Templates":
        for line in lines:
            result = self.miner.add_log_message(line)
            cid = result["cluster_id"]
            self.counts[cid] = self.counts.get(cid, 0) + 1
        return self

    def match(self, line: str) -> TemplateMatch | None:
        """The known template a line belongs to, or None if it fits none."""
        cluster = self.miner.match(line, full_search_strategy="fallback")
        if cluster is None:
            return None
        return TemplateMatch(cluster.cluster_id, cluster.get_template(), True)

    def most_frequent(self, n: int) -> list[tuple[str, int]]:
        """(template, count) of the n most frequent templates, most frequent first."""
        clusters = {c.cluster_id: c for c in self.miner.drain.clusters}
        ranked = sorted(self.counts.items(), key=lambda kv: -kv[1])[:n]
        return [(clusters[cid].get_template(), count) for cid, count in ranked if cid in clusters]
