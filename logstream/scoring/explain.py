"""Why a line scored high: its most surprising words, and the known pattern it is nearest to.

Tokens are merged back into the words of what the model read (a word is a run of tokens up to the
next space), each with its share of the line's surprise, so an explanation reads ``'fatal:' 31%``
rather than BPE pieces such as ``'l:'``. The nearest known template (from the model's training
data) is shown only when it really is another pattern, with the words that differ; a line that is a
known pattern word for word is said to be one, unusual in this context.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from .card import KnownTemplate
from .scorer import LineScore, LineScorer


@dataclass
class SurprisingToken:
    text: str  # a word of what the model read
    logprob: float  # log p of the word (the sum over its tokens)
    share: float | None = None  # its part of the line's surprise


def surprising_words(texts: list[str], logprobs) -> list[SurprisingToken]:
    """The line's words (tokens merged up to the next space), each with its log-probability and share."""
    words: list[list] = []
    for text, logprob in zip(texts, (float(x) for x in logprobs)):
        if words and not text.strip():  # the line's end (its newline) counts with its last word
            words[-1][1] += logprob
        elif not words or text[:1].isspace():
            words.append([text, logprob])
        else:
            words[-1][0] += text
            words[-1][1] += logprob
    words = [[w.strip(), lp] for w, lp in words if w.strip()]
    total = sum(-lp for _, lp in words) or 1.0
    return [SurprisingToken(w, round(lp, 3), round(-lp / total, 3)) for w, lp in words]


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
        words = surprising_words(self.scorer.token_texts(scored.token_ids), scored.logprobs)
        surprising = sorted(words, key=lambda w: w.logprob)[: self.top_k]
        template, similarity = self.index.nearest(scored.masked)
        named = ", ".join(f"{w.text!r} {w.share:.0%}" for w in surprising[:3])
        context = "warm stream" if scored.warm else "stream still warming up"
        if scored.threshold is None:
            against = "no score threshold yet"
        elif scored.score > scored.threshold:
            against = f"over threshold {scored.threshold:.2f}"
        else:
            against = f"under threshold {scored.threshold:.2f}, a rule fired"
        if scored.verdict is not None and scored.verdict.note:
            against += f" [{scored.verdict.note}]"
        summary = f"score {scored.score:.2f} {against} ({context}); most surprising: {named}"
        if template is not None and similarity >= 1.0:
            summary += "; the line is a known pattern word for word: what is unusual is where it comes"
        elif template is not None and similarity >= MIN_SIMILARITY:
            summary += (f"; nearest known pattern ({similarity:.0%} similar): {template} (differs in: "
                        f"{differing_words(scored.masked, template)})")
        else:
            template, similarity = None, None  # nothing known is close enough to say it is "like" this
        return LineExplanation(surprising, template, similarity, summary)


MIN_SIMILARITY = 0.5  # below it, a "nearest" pattern is unrelated and is not shown


def differing_words(line: str, template: str) -> str:
    """The words of ``line`` that are not in ``template`` (where they differ), a few."""
    a, b = line.split(), template.split()
    ops = difflib.SequenceMatcher(a=b, b=a, autojunk=False).get_opcodes()
    changed = [word for tag, _, _, j1, j2 in ops if tag in ("replace", "insert") for word in a[j1:j2]]
    return " ".join(changed[:8]) or "word order"
