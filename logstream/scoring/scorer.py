"""Score log lines: read, mask, tokenize, run through the streaming engine, aggregate, compare to threshold.

``LineScorer.score`` takes a batch of (stream id, line) pairs in arrival order and returns one
``LineScore`` per line; lines of different streams share one batched forward pass. Each line is
scored in the context of its own stream (shared sink prefix + the last L tokens of the stream).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from ..cache import Chunk, EngineConfig, StreamingEngine
from ..canonical import CanonicalLine, Canonicalizer, normalize_level, read_whole
from ..model import LoadedModel, load_model
from .adaptive import BASELINE, AdaptiveThresholds, Verdict, level_key, record_key, writer_key
from .aggregate import AGGREGATES, lines_aggregates
from .card import Calibration, ModelCard
from .masking import LineMasker


# The model reads a line's first tokens and its end, at most this many: one hostile line (a 2,169-byte
# SMTP command of "aaaa...", 2,111 tokens) filled a whole 2,048-token window, and every normal line after
# it scored as if the stream had no context (7 false alerts in the next 13 lines of exim's log). A
# quarter of the service's window; normal lines of every corpus here are shorter but for a few Rust
# tracing spans and broker dumps.
MAX_LINE_TOKENS = 512


@dataclass
class LineScore:
    stream: str
    masked: str  # what the model read: the line's canonical text, masked
    token_ids: list[int]
    logprobs: torch.Tensor  # [n] per token
    entropy: torch.Tensor  # [n]
    stream_position: int  # tokens the stream had seen before this line
    score: float
    threshold: float | None
    warm: bool  # the stream had seen at least warmup_tokens tokens before this line
    aggregates: dict[str, float] = field(default_factory=dict)
    canonical: CanonicalLine | None = None  # the line's header fields and message
    verdict: Verdict | None = None  # the decision, with the threshold in force and how it was set

    @property
    def is_anomaly(self) -> bool:
        if self.verdict is not None:
            return self.verdict.anomaly
        return self.threshold is not None and self.score > self.threshold


class LineScorer:
    """Scores log lines in the context of their streams; the one scoring path of logstream.

    ``score([(stream, line), ...])`` returns a ``LineScore`` per line: ``score`` (mean token surprise),
    ``threshold`` in force, ``is_anomaly``, ``verdict`` (how the threshold was set, with adaptive
    thresholds), ``canonical`` (the line's header fields and message). Lines of a stream must come in
    order; the scorer keeps each stream's window between calls. Not thread-safe.
    """

    def __init__(self, loaded: LoadedModel, card: ModelCard, engine_config: EngineConfig = EngineConfig(),
                 *, use_preamble: bool = True, sink_tokens: list[int] | None = None,
                 threshold: float | None = None, aggregate_name: str | None = None,
                 canonicalizer: Canonicalizer | None = None, adaptive: AdaptiveThresholds | None = None,
                 max_line_tokens: int = MAX_LINE_TOKENS):
        self.loaded, self.card = loaded, card
        self.max_line_tokens = max(2, max_line_tokens)
        self.tokenizer = loaded.tokenizer
        self.masker = LineMasker(tuple(card.masks))
        # models trained on canonical text read each line through the canonical reading; older
        # models read the whole line, as they were trained to
        self.canonicalizer = canonicalizer or Canonicalizer()
        self.calibration: Calibration | None = card.calibration
        self.aggregate_name = aggregate_name or (self.calibration.aggregate if self.calibration else "mean")
        if self.aggregate_name not in AGGREGATES:
            raise ValueError(f"unknown aggregate {self.aggregate_name!r}; choose one of {', '.join(AGGREGATES)}")
        self.threshold_override = threshold
        # thresholds that adapt to each source's own normal lines; a fixed override switches them off
        self.adaptive = adaptive if threshold is None else None
        self.sink_tokens = sink_tokens or self.default_sink(loaded, card if use_preamble else None)
        self.engine = StreamingEngine(loaded.model, self.sink_tokens, engine_config,
                                      model_window=loaded.sliding_window)
        self._options = dict(engine_config=engine_config, use_preamble=use_preamble, sink_tokens=sink_tokens,
                             threshold=threshold, aggregate_name=aggregate_name, max_line_tokens=max_line_tokens)

    def with_model(self, model_dir: str | Path) -> "LineScorer":
        """The same scorer on another model (an adapted version): same reading, thresholds and settings;
        a new engine, so the sink prefix is computed with the new weights and every window starts empty."""
        device = str(self.loaded.model.lm_head.weight.device)
        dtype = str(self.loaded.model.lm_head.weight.dtype).removeprefix("torch.")
        return load_scorer(model_dir, device=device, dtype=dtype, canonicalizer=self.canonicalizer,
                           adaptive=self.adaptive, **self._options)

    @staticmethod
    def default_sink(loaded: LoadedModel, card: ModelCard | None) -> list[int]:
        """The model's sink token (BOS, else EOS) followed by the card's pattern preamble."""
        tok = loaded.tokenizer
        sink_id = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        if sink_id is None:
            raise ValueError("the tokenizer has neither a BOS nor an EOS token: set cache.sink_tokens explicitly")
        ids = [sink_id]
        if card is not None:
            for line in card.preamble:
                ids += tok(line + "\n", add_special_tokens=False).input_ids
        return ids

    @property
    def model_version(self) -> str:
        return self.card.model_version

    def read(self, stream: str, line: str, level: str | None = None) -> CanonicalLine:
        """The line as this model reads it (its canonical reading, or the whole line for old models);
        ``level``: one the shipper gave apart from the line, used when the line itself names none."""
        if self.card.reads != "canonical":
            return read_whole(line)
        canonical = self.canonicalizer.read(stream, line)
        if level is not None and canonical.level is None:
            canonical = replace(canonical, level=normalize_level(level))
        return canonical

    def encode(self, stream: str, line: str, level: str | None = None) -> tuple[CanonicalLine, str, list[int]]:
        return self.encode_many([(stream, line, level)])[0][1:]

    def encode_many(self, entries: list[tuple[str, str]] | list[tuple[str, str, str | None]]
                    ) -> list[tuple[str, CanonicalLine, str, list[int]]]:
        """``encode`` of a batch, as (stream, canonical, masked, token ids): read and masked line by line,
        in order (a stream's first lines settle its format), then tokenized in one call of the Rust
        tokenizer (one call a line through transformers cost ~50 µs a line). A line of more than
        ``max_line_tokens`` tokens is read as its first ones and its last (the line's end)."""
        read = [(entry[0], self.read(*entry)) for entry in entries]
        masked = [self.masker(canonical.text) for _, canonical in read]
        texts = [m + "\n" for m in masked]
        backend = getattr(self.tokenizer, "backend_tokenizer", None)  # a fast tokenizer's own
        if backend is not None:
            ids = [encoding.ids for encoding in backend.encode_batch(texts, add_special_tokens=False)]
        else:
            ids = [self.tokenizer(text, add_special_tokens=False).input_ids for text in texts]
        cap = self.max_line_tokens
        ids = [i if len(i) <= cap else i[:cap - 1] + i[-1:] for i in ids]
        return [(stream, canonical, m, i) for (stream, canonical), m, i in zip(read, masked, ids)]

    def forget(self, stream: str) -> bool:
        """Drop a stream's window and its detected format; True if its window was known."""
        self.canonicalizer.forget(stream)
        return bool(self.engine.drop(stream))

    def thresholds(self) -> tuple[float | None, float | None]:
        """(warm, warming-up) thresholds in force."""
        if self.threshold_override is not None:
            return self.threshold_override, self.threshold_override
        if self.calibration is None:
            return None, None
        return self.calibration.threshold, self.calibration.warmup_threshold

    def score(self, entries: list[tuple[str, str]] | list[tuple[str, str, str | None]],
              known_normal: bool = False) -> list[LineScore]:
        """Score lines given as (stream, line) or (stream, line, level given apart) in arrival order.

        All lines of one stream in the batch go to the engine as one chunk (one row of one forward
        pass, not one pass per line); the per-token results are cut back into lines afterwards.
        ``known_normal``: the lines are a known-good baseline (``judge``).
        """
        out = self.model_scores(self.encode_many(entries))
        if self.adaptive is not None:
            self.judge(out, known_normal)
        return out

    def model_scores(self, encoded: list[tuple[str, CanonicalLine, str, list[int]]]) -> list[LineScore]:
        """The model's part of ``score``: lines already read and encoded, as (stream, canonical,
        masked, token ids), scored in their streams' windows; ``verdict`` is left for ``judge``.
        Touches only this scorer's engine: a scorer being prepared for a swap runs it on another
        thread while the one it replaces goes on serving."""
        by_stream: dict[str, list[int]] = {}
        for index, (stream, *_) in enumerate(encoded):
            by_stream.setdefault(stream, []).append(index)
        streams = list(by_stream)
        results = self.engine.score([Chunk(s, [t for i in by_stream[s] for t in encoded[i][3]]) for s in streams])
        warm_threshold, warmup_threshold = self.thresholds()
        warmup_tokens = self.calibration.warmup_tokens if self.calibration else 0
        order = [index for stream in streams for index in by_stream[stream]]  # the engine's token order
        lengths = [len(encoded[index][3]) for index in order]
        if results:  # every aggregate of every line at once (the evaluation reads every one)
            all_lines = iter(lines_aggregates(torch.cat([r.logprobs for r in results]),
                                              torch.cat([r.entropy for r in results]), lengths))
        out: list[LineScore | None] = [None] * len(encoded)
        for stream, result in zip(streams, results):
            offset = 0
            for index in by_stream[stream]:
                _, canonical, masked, ids = encoded[index]
                logprobs, entropy = result.logprobs[offset:offset + len(ids)], result.entropy[offset:offset + len(ids)]
                position = result.start + offset
                offset += len(ids)
                # a stream whose window was forgotten for lack of memory starts cold, whatever its position
                warm = position >= warmup_tokens and not result.restarted
                aggregates = next(all_lines)
                out[index] = LineScore(
                    stream=stream, masked=masked, token_ids=ids, logprobs=logprobs, entropy=entropy,
                    stream_position=position, score=aggregates[self.aggregate_name],
                    threshold=warm_threshold if warm else warmup_threshold, warm=warm, aggregates=aggregates,
                    canonical=canonical,
                )
        return out

    def source_of(self, stream: str, canonical: CanonicalLine) -> str:
        """What a line's thresholds are learned over: its stream, or all streams read in its format."""
        if self.adaptive.config.source_by == "stream":
            return stream
        return f"format:{self.canonicalizer.format_of(stream) or canonical.format}"

    def mark_normal(self, stream: str, line: str, score: float) -> str | None:
        """An operator says this line (and lines like it) is normal; returns its source, or None when
        thresholds are fixed."""
        if self.adaptive is None:
            return None
        canonical, masked, _ = self.encode(stream, line)
        return self.mark_read_normal(stream, canonical, masked, score)

    def mark_read_normal(self, stream: str, canonical: CanonicalLine, masked: str, score: float) -> str:
        """``mark_normal`` of a line already read (its canonical form and masked text); returns its source."""
        source = self.source_of(stream, canonical)
        self.adaptive.mark_normal(source, masked, score, level=level_key(canonical.level, canonical.event),
                                  text=canonical.text)
        return source

    def judge(self, scored: list[LineScore], known_normal: bool = False) -> None:
        """Judge each line against its source's recent normal lines, in arrival order, and learn from it
        (the adaptive thresholds' part of ``score``; sets ``verdict`` and ``threshold``).
        ``known_normal``: the lines are a known-good baseline (a log of a healthy period): none alerts,
        each is learned as normal whatever it reads as, its problem words and level included."""
        for line in scored:
            source = self.source_of(line.stream, line.canonical)
            level = level_key(line.canonical.level, line.canonical.event) if line.canonical is not None else None
            text = line.canonical.text if line.canonical is not None else None  # before masking
            # an access record (a line with its event: a request's status) is a record of its own
            record = (record_key(line.canonical.timestamp, line.canonical.level, line.canonical.pid)
                      if line.canonical is not None and line.canonical.event is None else None)
            writer = writer_key(line.canonical.process, line.canonical.pid) if line.canonical is not None else None
            line.verdict = self.adaptive.judge(source, line.masked, line.score, calibrated=line.threshold,
                                               level=level, text=text, stream=line.stream, record=record,
                                               writer=writer)
            if known_normal:
                line.verdict = replace(line.verdict, anomaly=False, how=BASELINE, routine=None, incident=False,
                                       held_out_of_range=(),
                                       note="a line of a known-good baseline: learned as normal")
            line.threshold = line.verdict.threshold
            if not line.verdict.learnable():  # an alert, or an incident's line (its alert's): not normal
                self.adaptive.seen(source, line.score, line.masked, level=level, text=text, how=line.verdict.how,
                                   stream=line.stream, writer=writer, incident=line.verdict.incident)
            else:
                self.adaptive.learn(source, line.masked, line.score, level=level,
                                    routine=line.verdict.routine is not None, text=text, stream=line.stream,
                                    writer=writer, held_out_of_range=line.verdict.held_out_of_range)

    def end_surprise(self, stream: str) -> float | None:
        """-log p(end of session | the stream so far), in nats; None for a model not trained with
        session ends (``ModelCard.session_ends``)."""
        if not self.card.session_ends:
            return None
        return -float(self.engine.next_logprobs(stream)[self.tokenizer.eos_token_id])

    def expected_line(self, stream: str, max_tokens: int = 64) -> str:
        """The line the model finds most likely next in this stream (greedy, never the end token),
        as readable masked text. Decoding feeds the guessed tokens into the stream's window: call it
        only for a stream that is ending."""
        eos = self.tokenizer.eos_token_id
        ids: list[int] = []
        logprobs = self.engine.next_logprobs(stream)
        for _ in range(max_tokens):
            logprobs = logprobs.clone()  # the engine's tensors are inference-mode tensors
            logprobs[eos] = -float("inf")
            token = int(logprobs.argmax())
            ids.append(token)
            if "\n" in self.tokenizer.decode([token]):
                break
            logprobs = self.engine.score([Chunk(stream, [token])], return_distributions=True)[0].next_logprobs[0]
        return self.tokenizer.decode(ids).split("\n")[0].strip()

    def token_texts(self, token_ids: list[int]) -> list[str]:
        return [self.tokenizer.decode([t]) for t in token_ids]


def load_scorer(model_dir: str | Path, device: str = "auto", dtype: str = "auto",
                engine_config: EngineConfig = EngineConfig(), **kwargs) -> LineScorer:
    """A ``LineScorer`` for a model directory (``logstream train`` makes them; ``Settings().model.path``
    is the shipped one). Keyword arguments go to ``LineScorer``: ``adaptive`` (thresholds that adapt
    per source, ``Settings().scoring.adaptive_thresholds()``; default: the model's fixed calibrated
    thresholds), ``canonicalizer`` (``Settings().parsing.canonicalizer()`` for pinned formats),
    ``threshold`` (one fixed threshold for every line)."""
    loaded = load_model(model_dir, device=device, dtype=dtype)
    return LineScorer(loaded, ModelCard.load(model_dir), engine_config, **kwargs)
