"""One module per ``logstream`` command (see ``logstream/cli.py``)."""


def add_format_argument(p) -> None:
    """``--format NAME``: the one way every command that reads log files is told their format."""
    p.add_argument("--format", help="read every line with this log format (`logstream formats` lists them; "
                   "'whole' reads lines as they are); default: detected per stream, or parsing.formats")


EMBEDDED_BROKER = "127.0.0.1:9092"  # where `logstream broker` listens by default


def kafka_settings(settings, bootstrap_servers: str | None = None):
    """The Kafka settings a command uses: ``--bootstrap-servers``, else ``kafka.bootstrap_servers``, else
    the embedded broker's default address (said on stderr, so nobody wonders where it connects)."""
    import sys

    kafka = settings.kafka
    if bootstrap_servers:
        return kafka.model_copy(update={"bootstrap_servers": bootstrap_servers})
    if not kafka.bootstrap_servers:
        print(f"no kafka.bootstrap_servers configured: using {EMBEDDED_BROKER}, where `logstream broker` "
              "listens (set LOGSTREAM_KAFKA__BOOTSTRAP_SERVERS for another Kafka)", file=sys.stderr)
        return kafka.model_copy(update={"bootstrap_servers": EMBEDDED_BROKER})
    return kafka
