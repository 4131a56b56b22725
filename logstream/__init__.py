"""logstream: real-time log anomaly detection with a streaming attention-sink language model."""

__version__ = "0.1.0"
