"""The detectors ``logstream eval`` can run, by name.

Each entry builds one fresh detector for a split; the language-model detectors go here too.
"""

from __future__ import annotations

from typing import Callable

from .baselines import DrainNoveltyDetector, NgramSessionDetector
from .detector import Detector
from .spec import EvalSpec


def _lm(spec, settings, args):
    from .lm_detectors import lm_detectors  # imports torch and the model only when asked for

    return lm_detectors(spec, settings, args)


# name -> builder(spec, settings, args) -> one detector or a family sharing state (the LM detectors
# share one model trained per split); a builder runs once per split, so detectors start fresh.
DETECTORS: dict[str, Callable[..., Detector | list[Detector]]] = {
    "drain-novelty": lambda spec, settings, args: DrainNoveltyDetector(pins=spec.pins()),
    # sequence novelty with the session's start and end (without the end on streams that never end)
    "ngram": lambda spec, settings, args: [NgramSessionDetector(2, ends=spec.sessions, pins=spec.pins())]
    + ([NgramSessionDetector(2, ends=False, pins=spec.pins())] if spec.sessions else []),
    "lm": _lm,
}


def build_detectors(spec: EvalSpec, settings, args) -> list[Detector]:
    """The detectors selected by ``args.detectors`` (all when it is empty or absent)."""
    wanted = list(getattr(args, "detectors", None) or DETECTORS)
    unknown = [name for name in wanted if name not in DETECTORS]
    if unknown:
        raise ValueError(f"unknown detector(s) {unknown}; available: {sorted(DETECTORS)}")
    detectors: list[Detector] = []
    for name in wanted:
        built = DETECTORS[name](spec, settings, args)
        detectors += built if isinstance(built, list) else [built]
    return detectors
