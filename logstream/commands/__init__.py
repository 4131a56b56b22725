"""One module per ``logstream`` command (see ``logstream/cli.py``)."""
