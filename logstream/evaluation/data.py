"""Reading a dataset spec into ``LogEntry`` lists, and cutting them into train/calibration/test.

Every split obeys the same protocol: detectors train on normal entries of the train part only
(plus the spec's normal-only extra files), a share of those normals is held out for threshold
calibration, and the test part keeps every entry, normal or not. Random splits are seeded, so
the same spec and seed always give the same split.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from ..keys import key_of
from .detector import LogEntry
from .spec import EvalSpec, GroupLabels, LineLabels, RandomSplit

UNKEYED_STREAM = "(unkeyed)"   # lines the stream regex does not match share this stream
CONSTANT_STREAM = "all"


@dataclass(frozen=True)
class Dataset:
    spec: EvalSpec
    entries: list[LogEntry]       # the labeled files, in time order, index 0..N-1
    extra_train: list[LogEntry]   # normal-only training lines, index -M..-1 (they come first)

    @property
    def n_anomalous(self) -> int:
        return sum(e.label for e in self.entries)


@dataclass(frozen=True)
class Split:
    name: str
    seed: int | None
    train: list[LogEntry]         # normal entries only: the extra files, then the train part's
    calibration: list[LogEntry]   # normal entries held out of the train part, for thresholds
    test: list[LogEntry]          # every entry of the test part, in order


@dataclass(frozen=True)
class _RawLine:
    path: Path
    lineno: int
    text: str

    def where(self) -> str:
        return f"{self.path}:{self.lineno}"


def _read(paths: list[Path]) -> Iterator[_RawLine]:
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for lineno, text in enumerate(f, start=1):
                text = text.rstrip("\r\n")
                if text.strip():  # a blank line carries neither a label nor a message
                    yield _RawLine(path, lineno, text)


def _sorted(raw: list[_RawLine], sort_by: str | None) -> list[_RawLine]:
    if sort_by is None:
        return raw
    pattern = re.compile(sort_by)

    def number(line: _RawLine) -> float:
        value = key_of(pattern, line.text)
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{line.where()}: expected a number matching sort_by {sort_by!r}, "
                             f"got {line.text[:120]!r}") from None

    return sorted(raw, key=number)  # stable: equal times keep file order


def _group_labels(labels: GroupLabels) -> dict[str, int]:
    with open(labels.file, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        columns = reader.fieldnames or []
        for column in (labels.key_column, labels.label_column):
            if column not in columns:
                raise ValueError(f"labels file {labels.file}: no column {column!r} (columns: {columns})")
        table = {row[labels.key_column].strip(): int(row[labels.label_column].strip() == labels.anomalous)
                 for row in reader}
    return table


class _EntryReader:
    """Turns raw lines into entries following the spec's label, stream and group rules."""

    def __init__(self, spec: EvalSpec):
        self.spec = spec
        self.stream_pattern = None if spec.stream_key == "constant" else re.compile(spec.stream_key)
        self.labels = spec.labels
        if isinstance(spec.labels, LineLabels):
            self.label_pattern = re.compile(spec.labels.pattern)
        else:
            self.key_pattern = re.compile(spec.labels.key)
            self.group_table = _group_labels(spec.labels)

    def stream(self, text: str) -> str:
        if self.stream_pattern is None:
            return CONSTANT_STREAM
        return key_of(self.stream_pattern, text) or UNKEYED_STREAM

    def entry(self, index: int, raw: _RawLine, normal_only: bool = False) -> LogEntry:
        if isinstance(self.labels, LineLabels):
            line, label = self._line_label(raw)
            group = None
        else:
            line, (group, label) = raw.text, self._group_label(raw, normal_only)
        if normal_only and label:
            raise ValueError(f"{raw.where()}: extra_train_files must hold normal lines only, "
                             f"this one is labeled anomalous")
        return LogEntry(index=index, stream=self.stream(raw.text), line=line, label=label, group=group)

    def _line_label(self, raw: _RawLine) -> tuple[str, int]:
        match = self.label_pattern.search(raw.text)
        if match is None or match.group("label") is None:
            raise ValueError(f"{raw.where()}: expected a label matching {self.labels.pattern!r} (named group "
                             f"'label'; {self.labels.normal!r} = normal), got {raw.text[:120]!r}")
        line = raw.text[:match.start()] + raw.text[match.end():] if self.labels.strip else raw.text
        return line, int(match.group("label") != self.labels.normal)

    def _group_label(self, raw: _RawLine, normal_only: bool) -> tuple[str | None, int]:
        key = key_of(self.key_pattern, raw.text)
        if normal_only:  # extra training lines are normal by declaration; the key only groups them
            return key, 0
        if key is None:
            raise ValueError(f"{raw.where()}: expected a group key matching {self.labels.key!r}, "
                             f"got {raw.text[:120]!r}")
        if key not in self.group_table:
            raise ValueError(f"{raw.where()}: group {key!r} has no row in labels file {self.labels.file}")
        return key, self.group_table[key]


def load_dataset(spec: EvalSpec) -> Dataset:
    """The spec's labeled entries (sorted when ``sort_by`` is set) and its extra training entries."""
    reader = _EntryReader(spec)
    labeled = _sorted(list(_read(spec.files)), spec.sort_by)
    extra = _sorted(list(_read(spec.extra_train_files)), spec.sort_by)
    entries = [reader.entry(i, raw) for i, raw in enumerate(labeled)]
    extra_train = [reader.entry(i - len(extra), raw, normal_only=True) for i, raw in enumerate(extra)]
    n_anomalous = sum(e.label for e in entries)
    if not entries:
        raise ValueError(f"{spec.source or spec.name}: the files hold no lines")
    if n_anomalous in (0, len(entries)):
        what = "anomalous" if n_anomalous == 0 else "normal"
        raise ValueError(f"{spec.source or spec.name}: no {what} entry among {len(entries)}; "
                         f"check the labels' normal/anomalous value")
    return Dataset(spec=spec, entries=entries, extra_train=extra_train)


# ---- splits ---------------------------------------------------------------------------------

def _units(entries: list[LogEntry], by_group: bool) -> list[list[LogEntry]]:
    """Entries bundled into the units a split moves as a whole: groups (first appearance order)
    or single lines."""
    if not by_group:
        return [[e] for e in entries]
    groups: dict[str, list[LogEntry]] = {}
    for e in entries:
        groups.setdefault(e.group if e.group is not None else f"(line {e.index})", []).append(e)
    return list(groups.values())


def _count(fraction: float, n: int, what: str) -> int:
    """round(fraction * n), kept so that both sides get at least one unit."""
    if n < 2:
        raise ValueError(f"need at least 2 {what} to split, got {n}")
    return min(max(round(fraction * n), 1), n - 1)


def _flatten(units: list[list[LogEntry]]) -> list[LogEntry]:
    return sorted((e for unit in units for e in unit), key=lambda e: e.index)


def _test_only_split(dataset: Dataset, name: str) -> Split:
    """Every labeled entry is test; the extra (normal) training entries are cut into fit and the
    latest units for calibration."""
    spec = dataset.spec
    units = _units(dataset.extra_train, by_group=spec.level == "group")
    n_calibration = _count(spec.calibration_fraction, len(units), "training normal units")
    return Split(name=name, seed=None, train=_flatten(units[:-n_calibration]),
                 calibration=_flatten(units[-n_calibration:]), test=list(dataset.entries))


def _split(dataset: Dataset, name: str, seed: int | None) -> Split:
    spec = dataset.spec
    if spec.split.kind == "test_only":
        return _test_only_split(dataset, name)
    split_groups = spec.split.kind == "groups_chronological" or (
        spec.split.kind == "random" and spec.level == "group")
    units = _units(dataset.entries, by_group=split_groups)
    n_train = _count(spec.split.train_fraction, len(units), "groups" if split_groups else "lines")
    rng = np.random.default_rng(seed) if seed is not None else None
    if rng is not None:
        order = rng.permutation(len(units))
        train_units = [units[i] for i in sorted(order[:n_train])]
        test_units = [units[i] for i in sorted(order[n_train:])]
    else:
        train_units, test_units = units[:n_train], units[n_train:]

    # Only normal entries ever reach a detector's fit; calibration holds out whole groups when
    # evaluation is per group, so the threshold is set on the kind of thing that alerts.
    normals = [e for e in _flatten(train_units) if e.label == 0]
    normal_units = _units(normals, by_group=spec.level == "group")
    n_calibration = _count(spec.calibration_fraction, len(normal_units), "training normal units")
    if rng is not None:
        held = set(rng.choice(len(normal_units), size=n_calibration, replace=False).tolist())
    else:  # chronological: calibrate on the latest normals, the closest in time to the test part
        held = set(range(len(normal_units) - n_calibration, len(normal_units)))
    calibration = _flatten([u for i, u in enumerate(normal_units) if i in held])
    fit = _flatten([u for i, u in enumerate(normal_units) if i not in held])
    return Split(name=name, seed=seed, train=dataset.extra_train + fit, calibration=calibration,
                 test=_flatten(test_units))


def make_splits(dataset: Dataset) -> list[Split]:
    """One split per seed for a random protocol, else the one chronological split."""
    split = dataset.spec.split
    if isinstance(split, RandomSplit):
        return [_split(dataset, f"seed {seed}", seed) for seed in split.seeds]
    return [_split(dataset, split.kind, None)]
