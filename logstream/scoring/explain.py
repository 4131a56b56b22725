"""Why a line scored high: its most surprising tokens, and the known pattern it is nearest to."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from .card import KnownTemplate
from .scorer import LineScore, LineScorer


@dataclass
class SurprisingToken:
    text: str
    logprob: float


@dataclass
class LineExplanation:
    surprising_tokens: list[SurprisingToken]
    nearest_template: str | None
    template_similarity: float | None
    summary: str


class TemplateIndex:
    """Nearest known template by word-level similarity of masked lines (difflib ratio)."""

    def __init__(self, templates: list[KnownTemplate]):
        self.templates = [t.template for t in templates]
        self._words = [t.split() for t in self.templates]

    def nearest(self, masked_line: str) -> tuple[str | None, float | None]:
        words = masked_line.split()
        best, best_ratio = None, -1.0
        matcher = difflib.SequenceMatcher(autojunk=False)
        matcher.set_seq2(words)
        for template, template_words in zip(self.templates, self._words):
            matcher.set_seq1(template_words)
            if matcher.real_quick_ratio() <= best_ratio or matcher.quick_ratio() <= best_ratio:
                continue
            ratio = matcher.ratio()
            if ratio > best_ratio:
                best, best_ratio = template, ratio
        return (best, round(best_ratio, 4)) if best is not None else (None, None)


class Explainer:
    def __init__(self, scorer: LineScorer, top_k: int = 5):
        self.scorer = scorer
        self.index = TemplateIndex(scorer.card.templates)
        self.top_k = top_k

    def explain(self, scored: LineScore) -> LineExplanation:
        texts = self.scorer.token_texts(scored.token_ids)
        order = sorted(range(len(texts)), key=lambda i: float(scored.logprobs[i]))[: self.top_k]
        surprising = [SurprisingToken(texts[i], round(float(scored.logprobs[i]), 3)) for i in sorted(order)]
        template, similarity = self.index.nearest(scored.masked)
        words = ", ".join(repr(t.text.strip() or t.text) for t in sorted(surprising, key=lambda t: t.logprob)[:3])
        context = "warm stream" if scored.warm else "stream still warming up"
        against = f"over threshold {scored.threshold:.2f}" if scored.threshold is not None else "uncalibrated"
        if scored.verdict is not None and scored.verdict.note:
            against += f" [{scored.verdict.note}]"
        summary = f"score {scored.score:.2f} {against} ({context}); most surprising: {words}"
        if template is not None:
            summary += f"; nearest known pattern ({similarity:.0%} similar): {template}"
        return LineExplanation(surprising, template, similarity, summary)
