"""One module per ``logstream`` command (see ``logstream/cli.py``)."""


def add_format_argument(p) -> None:
    """``--format NAME``: the one way every command that reads log files is told their format."""
    p.add_argument("--format", help="read every line with this log format (`logstream formats` lists them; "
                   "'whole' reads lines as they are); default: detected per stream, or parsing.formats")
