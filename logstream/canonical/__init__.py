"""What the model reads: one canonical reading of every log line (header fields split off)."""

from .canonicalizer import (PARSERS, WHOLE, CanonicalLine, Canonicalizer, Pin, describe_formats, make_pin,
                            read_whole, read_with, user_format)
from .formats import FORMATS, normalize_level

__all__ = ["CanonicalLine", "Canonicalizer", "FORMATS", "PARSERS", "Pin", "WHOLE", "describe_formats", "make_pin",
           "normalize_level", "read_whole", "read_with", "user_format"]
