"""The YAML dataset spec of ``logstream eval``: which files, how labels and streams are read, and
the train/test protocol. Relative paths are resolved against the spec file's directory.

Example (BGL, labels in the first field of each line)::

    name: bgl_chrono
    files: [../../sample_logs/loghub/BGL/BGL_2k.log]
    extra_train_files: [../../sample_logs/bgl/BGL_10k_head.log]   # all normal, training only
    labels: {level: line, pattern: '^(?P<label>\\S+)\\s+', normal: '-'}
    stream_key: constant
    sort_by: '^\\S+\\s+(\\d+)'          # BGL_2k is a sample, not in time order
    split: {kind: chronological, train_fraction: 0.5}
    calibration_fraction: 0.2
    target_false_alert_rate: 0.001
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import (BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator,
                      model_validator)


class SpecError(ValueError):
    """A dataset spec that cannot be used; the message says where and why."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _compiles(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression ({exc}): {pattern!r}") from None
    return pattern


def _resolve(path: Path, info: ValidationInfo) -> Path:
    base = (info.context or {}).get("base_dir")
    return path if path.is_absolute() or base is None else (Path(base) / path).resolve()


class LineLabels(_Strict):
    """Each line carries its own label, found by ``pattern``'s named group ``label``."""
    level: Literal["line"]
    pattern: str = Field(description="regex with a named group 'label', e.g. '^(?P<label>\\S+)\\s+'")
    normal: str = Field(description="the label value meaning normal; anything else is anomalous")
    strip: bool = Field(True, description="drop the pattern's whole match from the line detectors see")

    @field_validator("pattern")
    @classmethod
    def _has_label_group(cls, value: str) -> str:
        if "label" not in re.compile(_compiles(value)).groupindex:
            raise ValueError(f"needs a named group 'label', as in '^(?P<label>\\S+)\\s+'; got {value!r}")
        return value


class GroupLabels(_Strict):
    """Labels per group (e.g. HDFS block) in a CSV; a line belongs to the group its ``key`` matches."""
    level: Literal["group"]
    key: str = Field(description="regex whose match (or group 1) is the group key, e.g. 'blk_-?\\d+'")
    file: Path = Field(description="CSV with a header row")
    key_column: str
    label_column: str
    anomalous: str = Field(description="the label value meaning anomalous; anything else is normal")

    @field_validator("key")
    @classmethod
    def _key_compiles(cls, value: str) -> str:
        return _compiles(value)

    @field_validator("file")
    @classmethod
    def _resolve_file(cls, path: Path, info: ValidationInfo) -> Path:
        return _resolve(path, info)


class ChronologicalSplit(_Strict):
    """The first ``train_fraction`` of the lines (in time order) is the train part."""
    kind: Literal["chronological"]
    train_fraction: float = Field(gt=0, lt=1)


class RandomSplit(_Strict):
    """A random ``train_fraction`` of the lines (of the groups, for group labels), once per seed."""
    kind: Literal["random"]
    train_fraction: float = Field(gt=0, lt=1)
    seeds: list[int] = Field(min_length=1)


class GroupsChronologicalSplit(_Strict):
    """Groups ordered by first appearance; the first ``train_fraction`` of them is the train part."""
    kind: Literal["groups_chronological"]
    train_fraction: float = Field(gt=0, lt=1)


class TestOnlySplit(_Strict):
    """Every labeled line is test; detectors train on ``extra_train_files`` only (a separate
    normal training set, as in published session benchmarks)."""
    kind: Literal["test_only"]


Labels = Annotated[LineLabels | GroupLabels, Field(discriminator="level")]
Split = Annotated[ChronologicalSplit | RandomSplit | GroupsChronologicalSplit | TestOnlySplit,
                  Field(discriminator="kind")]


class EvalSpec(_Strict):
    name: str = Field(description="names the report files; default: the spec file's name")
    description: str = ""
    files: list[Path] = Field(min_length=1, description="labeled log files, read in this order")
    labels: Labels
    stream_key: str = Field("constant", description="'constant' (one stream) or a regex whose match "
                            "(or group 1) is the stream id; lines it does not match share one stream")
    sort_by: str | None = Field(None, description="regex whose group 1 (or match) is a number to sort by")
    format: str | None = Field(None, description="read every line with this log format (a name from "
                               "`logstream formats`); default: detected per stream, as the service does")
    content: str | None = Field(None, description="override: a regex with a named group 'content' (the "
                                "message) and optionally timestamp, host, process, pid, level, component; "
                                "every detector reads lines through it instead of a known format")
    extra_train_files: list[Path] = Field([], description="normal-only lines, used for training only")
    train_on: Literal["normal"] = Field("normal", description="detectors only ever train on normal lines")
    split: Split
    calibration_fraction: float = Field(0.2, gt=0, lt=1, description="share of the training normals "
                                        "held out to calibrate thresholds")
    target_false_alert_rate: float = Field(0.001, ge=0, lt=1)
    level: Literal["line", "group"] | None = Field(None, description="evaluate per line or per group "
                                                   "(default: the labels' level)")
    sessions: bool = Field(False, description="each keyed stream is a whole session (an HDFS block's "
                           "lifecycle): the language model learns session ends, and a session's end is "
                           "scored after its last line, as the service scores it when the session goes quiet")
    real_normal_per_anomalous: float | None = Field(None, gt=0, description="normal units per anomalous one in "
                                                    "the real world: precision and F1 are also reported with "
                                                    "each false alert weighted to that ratio")
    source: Path | None = Field(None, description="the spec file (set by load_spec)")

    @field_validator("sort_by")
    @classmethod
    def _sort_by_compiles(cls, value: str | None) -> str | None:
        return None if value is None else _compiles(value)

    @field_validator("content")
    @classmethod
    def _has_content_group(cls, value: str | None) -> str | None:
        if value is not None and "content" not in re.compile(_compiles(value)).groupindex:
            raise ValueError(f"needs a named group 'content', as in '^(?:\\S+\\s+){{4}}(?P<content>.*)$'; "
                             f"got {value!r}")
        return value

    @field_validator("format")
    @classmethod
    def _known_format(cls, value: str | None) -> str | None:
        if value is not None:
            from ..canonical import make_pin

            make_pin(format=value)
        return value

    @field_validator("stream_key")
    @classmethod
    def _stream_key(cls, value: str) -> str:
        return value if value == "constant" else _compiles(value)

    @field_validator("files", "extra_train_files")
    @classmethod
    def _resolve_paths(cls, paths: list[Path], info: ValidationInfo) -> list[Path]:
        return [_resolve(p, info) for p in paths]

    @model_validator(mode="after")
    def _consistent(self):
        if self.level is None:
            object.__setattr__(self, "level", self.labels.level)
        if self.level == "group" and self.labels.level != "group":
            raise ValueError("level 'group' needs group-level labels (labels.level: group)")
        if self.level == "line" and self.labels.level == "group":
            # most lines of an anomalous HDFS block are perfectly normal: only the group is labeled
            raise ValueError("group-level labels label groups, not lines: use level 'group'")
        if self.split.kind == "groups_chronological" and self.labels.level != "group":
            raise ValueError("split 'groups_chronological' needs group-level labels (labels.level: group)")
        if self.split.kind == "test_only" and not self.extra_train_files:
            raise ValueError("split 'test_only' trains on extra_train_files only: give at least one")
        if self.sessions and self.stream_key == "constant":
            raise ValueError("sessions need keyed streams: set stream_key to the session id's regex")
        return self

    def pins(self) -> tuple:
        """How every detector reads this data set's lines: the spec's regex or format, else detection."""
        from ..canonical import make_pin

        if self.content is not None:
            return (make_pin(regex=self.content),)
        if self.format is not None:
            return (make_pin(format=self.format),)
        return ()

    @property
    def seeds(self) -> list[int]:
        return list(self.split.seeds) if isinstance(self.split, RandomSplit) else []

    def with_seeds(self, seeds: list[int]) -> "EvalSpec":
        """The same spec with other seeds for a random split (other splits have none to change)."""
        if not isinstance(self.split, RandomSplit):
            return self
        return self.model_copy(update={"split": self.split.model_copy(update={"seeds": list(seeds)})})

    def input_paths(self) -> list[tuple[str, Path]]:
        """(field, path) of every file the spec reads."""
        named = [(f"files[{i}]", p) for i, p in enumerate(self.files)]
        named += [(f"extra_train_files[{i}]", p) for i, p in enumerate(self.extra_train_files)]
        if isinstance(self.labels, GroupLabels):
            named.append(("labels.file", self.labels.file))
        return named


def _describe(error: ValidationError) -> str:
    lines = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "(top level)"
        lines.append(f"  {where}: {item['msg']}")
    return "\n".join(lines)


def parse_spec(data: dict, base_dir: Path, default_name: str = "spec",
               source: Path | None = None) -> EvalSpec:
    """A spec from a mapping; relative paths are taken from ``base_dir``; every input file must exist."""
    where = source or "dataset spec"
    if not isinstance(data, dict):
        raise SpecError(f"{where}: must be a YAML mapping of fields, got {type(data).__name__}")
    data = {"name": default_name, **data, "source": source}
    try:
        spec = EvalSpec.model_validate(data, context={"base_dir": Path(base_dir).resolve()})
    except ValidationError as exc:
        raise SpecError(f"{where}: invalid dataset spec:\n{_describe(exc)}") from None
    for field, path in spec.input_paths():
        if not path.is_file():
            raise FileNotFoundError(f"{where}: {field}: file {path} does not exist")
    return spec


def load_spec(path: str | Path) -> EvalSpec:
    """Read and check a YAML dataset spec."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"dataset spec {path} does not exist")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: not valid YAML: {exc}") from None
    return parse_spec(data, path.parent, default_name=path.stem, source=path)
