"""The canonical reading of log lines: golden real lines of every format, per-stream detection, pins,
and the guarantee that the calendar, the clock, hosts, pids and label columns never reach the model."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml

from logstream.canonical import WHOLE, Canonicalizer, make_pin, normalize_level
from logstream.canonical.formats import FORMATS, http_status
from logstream.config import FormatPin, Settings
from logstream.scoring.masking import LineMasker
from logstream.synth import SyntheticLogs

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = yaml.safe_load((ROOT / "tests" / "golden" / "canonical.yaml").read_text())
LOGHUB = ROOT / "sample_logs" / "loghub"
LOGHUB_FORMATS = dict(Android="android", Apache="apache_error", BGL="bgl", HDFS="hdfs", HPC="hpc", Hadoop="log4j",
                      HealthApp="healthapp", Linux="syslog", Mac="syslog", OpenSSH="syslog", OpenStack="openstack",
                      Proxifier="proxifier", Spark="spark", Thunderbird="thunderbird", Windows="windows_cbs",
                      Zookeeper="zookeeper")


@pytest.mark.parametrize("case", GOLDEN, ids=[f"{c['format']}-{i}" for i, c in enumerate(GOLDEN)])
def test_golden_real_lines(case):
    read = Canonicalizer().read("stream", case["line"])
    assert read.format == case["format"], case["source"]
    expect = dict(case["expect"])
    assert read.text == expect.pop("text")
    assert read.fields.get("label") == expect.pop("label", None)
    for name in ("level", "process", "component", "event", "host", "pid", "timestamp", "message"):
        assert getattr(read, name) == expect.get(name), f"{name} of {case['source']}"


def test_every_required_format_has_a_golden_line():
    wanted = {"syslog", "rfc5424", "iso_prefix", "access_log", "nginx_error", "apache_error", "log4j", "logback", "postgresql",
              "python", "klog", "logfmt", "json", "redis", "haproxy", "haproxy_http", "bind", "vsftpd", "mosquitto", "exim", "unbound",
              "php", "prosody", "uwsgi_request", "mysql", "rspamd",
              *LOGHUB_FORMATS.values()}
    assert wanted <= {c["format"] for c in GOLDEN}
    journald = {c["source"].split(" (")[0] for c in GOLDEN if c["source"].startswith("journalctl")}
    assert journald == {"journalctl -o short", "journalctl -o short-iso", "journalctl -o json"}


@pytest.mark.parametrize("system", sorted(LOGHUB_FORMATS))
def test_each_loghub_sample_is_detected_and_read_by_its_format(system):
    canonicalizer = Canonicalizer()
    path = LOGHUB / system / f"{system}_2k.log"
    reads = [canonicalizer.read(str(path), line) for line in path.read_text(errors="replace").splitlines()]
    assert canonicalizer.format_of(str(path)) == LOGHUB_FORMATS[system]
    assert all(r.format == LOGHUB_FORMATS[system] for r in reads)
    assert all(r.message or r.text for r in reads)


def test_the_model_text_never_holds_time_host_pid_or_label():
    for case in GOLDEN:
        read = Canonicalizer().read("s", case["line"])
        for value in (read.timestamp, read.host, read.pid, read.fields.get("label")):
            if value and len(value) > 3:  # short values ("-", "1") also occur inside messages
                assert value not in read.text, (case["source"], value)


def test_bgl_label_column_is_read_the_same_with_or_without_it():
    line = (LOGHUB / "BGL" / "BGL_2k.log").read_text().splitlines()
    anomalous = next(l for l in line if not l.startswith("- "))
    label, rest = anomalous.split(" ", 1)
    with_label, without = Canonicalizer().read("a", anomalous), Canonicalizer().read("b", rest)
    assert with_label.fields["label"] == label and "label" not in without.fields
    assert with_label.text == without.text and label not in with_label.text


# --- the calendar never reaches the model ------------------------------------------------------

def _with_year(line: str, year: int) -> str:
    """The same line with the year written into its time stamp where the format can carry one."""
    syslog = re.match(r"^([A-Z][a-z]{2} +\d{1,2}) (\d\d:\d\d:\d\d) ", line)
    if syslog:
        return f"{syslog.group(1)} {year} {syslog.group(2)} {line[syslog.end():]}"
    return line  # HDFS, Apache and ZooKeeper stamps carry their year already


def _variants():
    """(name, start time, write the year) for each month of two years, two time zones."""
    zones = {"UTC": timezone.utc, "UTC-05": timezone(timedelta(hours=-5))}
    for year in (2025, 2026):
        for month in range(1, 13):
            for zone, tz in zones.items():
                for with_year in (False, True):
                    yield f"{year}-{month:02d} {zone}{' +year' if with_year else ''}", \
                        datetime(year, month, 15, 9, 30, tzinfo=tz), with_year


def _normal_lines(start: datetime, n: int, with_year: bool) -> list[tuple[str, str]]:
    logs = SyntheticLogs(seed=7, anomaly_rate=0.0, start_time=start)
    out = []
    for entry in logs:
        out.append((entry.stream, _with_year(entry.line, entry.timestamp.year) if with_year else entry.line))
        if len(out) == n:
            return out
    return out


def test_the_same_lines_in_any_month_year_and_time_zone_read_identically():
    """What the model reads (canonical text, masked) is the same; HDFS task ids such as
    ``_task_202501150930_0011`` carry a date inside the message, which the number mask covers."""
    masker = LineMasker()
    texts = {}
    for name, start, with_year in _variants():
        canonicalizer = Canonicalizer()
        lines = _normal_lines(start, 400, with_year)
        texts[name] = [masker(canonicalizer.read(stream, line).text) for stream, line in lines]
        assert len({line for _, line in lines}) > 300  # the raw lines do differ: their stamps
    reference = texts["2025-01 UTC"]
    assert len(texts) == 96 and all(t == reference for t in texts.values())
    raw = [line for _, line in _normal_lines(datetime(2025, 1, 15, 9, 30, tzinfo=timezone.utc), 400, False)]
    other = [line for _, line in _normal_lines(datetime(2026, 11, 15, 9, 30, tzinfo=timezone.utc), 400, False)]
    assert sum(a != b for a, b in zip(raw, other)) > 390  # ... and yet every canonical text is the same


# --- per-stream detection, fallbacks and pins ----------------------------------------------------

def test_a_stream_keeps_the_format_its_first_lines_voted_for():
    canonicalizer = Canonicalizer(detect_lines=3)
    hadoop = (LOGHUB / "Hadoop" / "Hadoop_2k.log").read_text().splitlines()[:3]
    for line in hadoop:
        canonicalizer.read("app", line)
    assert canonicalizer.format_of("app") == "log4j"
    # a Java stack-trace line fits no format: read whole, never dropped
    trace = "\tat org.apache.hadoop.ipc.Client.call(Client.java:1475)"
    read = canonicalizer.read("app", trace)
    assert read.format == WHOLE and read.text == trace.strip()
    # a line of another known format in the stream is read by that format
    assert canonicalizer.read("app", "Dec 10 06:55:46 LabSZ sshd[24200]: Invalid user x").format == "syslog"
    canonicalizer.forget("app")
    assert canonicalizer.format_of("app") is None


def test_the_line_that_settles_a_streams_format_may_fit_none():
    """The line at which the first lines' votes settle the format is read like any other: one that fits no
    format (a stack frame) is read whole (it raised IndexError)."""
    canonicalizer = Canonicalizer(detect_lines=3)
    hadoop = (LOGHUB / "Hadoop" / "Hadoop_2k.log").read_text().splitlines()[:2]
    for line in hadoop:
        canonicalizer.read("app", line)
    trace = "\tat org.apache.hadoop.ipc.Client.call(Client.java:1475)"
    read = canonicalizer.read("app", trace)
    assert read.format == WHOLE and read.text == trace.strip()
    assert canonicalizer.format_of("app") == "log4j"


def test_pinned_streams_use_their_format_or_regex():
    pins = [make_pin(stream="raw-.*", format=WHOLE),
            make_pin(stream="app", regex=r"^(?P<timestamp>\S+) <(?P<level>\w+)> (?P<message>.*)$")]
    canonicalizer = Canonicalizer(pins)
    line = "Dec 10 06:55:46 LabSZ sshd[24200]: Invalid user x"
    assert canonicalizer.read("raw-1", line).text == line
    assert canonicalizer.read("other", line).text == "sshd: Invalid user x"
    assert canonicalizer.read("app", "12:00:01 <warning> disk 91% full").text == "WARN: disk 91% full"
    assert canonicalizer.read("app", "no header here").format == WHOLE  # not dropped


def test_pins_from_the_configuration_fail_early_and_clearly():
    with pytest.raises(ValueError, match="unknown log format 'sislog'"):
        FormatPin(format="sislog")
    with pytest.raises(ValueError, match="named group 'message'"):
        FormatPin(regex=r"^(?P<timestamp>\S+) (?P<rest>.*)$")
    with pytest.raises(ValueError, match="exactly one"):
        FormatPin(stream="x")
    settings = Settings(parsing={"formats": [{"stream": "web-.*", "format": "apache_error"}]})
    canonicalizer = settings.parsing.canonicalizer()
    assert canonicalizer.read("web-1", "[Sun Dec 04 04:47:44 2005] [error] x").format == "apache_error"


def test_structured_lines_keep_their_fields_and_survive_hostile_json():
    canonicalizer = Canonicalizer()
    read = canonicalizer.read("s", json.dumps({"ts": 1, "level": "error", "msg": "db timeout", "db": "orders",
                                               "attempt": 3, "tags": ["a"]}))
    assert read.text == 'ERROR: db timeout db=orders attempt=3 tags=["a"]'
    deep = "{" * 5000 + "}" * 5000
    assert canonicalizer.read("s", deep).format == WHOLE  # RecursionError inside json: read as text
    assert canonicalizer.read("s", '{"no": "message field"}').format != "json"
    assert canonicalizer.read("s", "level=warn msg=\"queue full\" size=1024").text == "WARN: queue full size=1024"
    # a level that is no syslog severity: a digit int() refuses, more digits than it reads, no pino number
    for level, read in (("²", "²"), ("9" * 5000, None), ("35", None), ("3", "ERROR")):
        assert canonicalizer.read("s", json.dumps({"msg": "x", "level": level})).level == read, level[:8]


def test_a_record_with_a_numeric_level_and_a_named_one_reads_the_named_one():
    """PowerDNS Recursor's structured lines carry ``level="0"`` (a verbosity) beside ``prio="Notice"``: read as
    syslog severity 0, every line was CRITICAL. A number still reads as a severity where no key names one."""
    reader = Canonicalizer()
    pdns = reader.read("pdns", 'Dec 07 06:06:08 msg="Question answered from packet cache" subsystem="in" level="0" '
                               'prio="Notice" tid="3" ts="1796623568.185" proto="udp" qtype="TXT"')
    assert pdns.level == "NOTICE" and "prio=" not in pdns.text and "proto=udp" in pdns.text
    warning = reader.read("pdns2", 'msg="NOT using IPv6 for outgoing queries" subsystem="config" level="0" '
                                   'prio="Warning" tid="0"')
    assert warning.level == "WARN"
    journald = reader.read("journal", json.dumps({"MESSAGE": "disk full", "PRIORITY": "3",
                                                  "__REALTIME_TIMESTAMP": "1796623568185000"}))
    assert journald.level == "ERROR"
    # bunyan and pino (Node.js) number their levels 10 to 60: 30 is info, 50 an error
    bunyan = {"v": 0, "name": "api", "hostname": "web1", "pid": 7, "time": "2026-12-07T08:00:00.000Z"}
    assert reader.read("node", json.dumps(bunyan | {"level": 30, "msg": "listening"})).level == "INFO"
    failed = reader.read("node", json.dumps(bunyan | {"level": 50, "msg": "request failed"}))
    assert failed.level == "ERROR" and failed.text.startswith("ERROR api: request failed")
    assert reader.read("node", json.dumps({"level": 60, "levelname": "warning", "msg": "x"})).level == "WARN"


def test_levels_have_one_spelling():
    assert {normalize_level(x) for x in ("W", "warn", "WARNING", "4")} == {"WARN"}
    assert normalize_level("E") == normalize_level("err") == normalize_level("SEVERE") == "ERROR"
    assert normalize_level("FAILURE") == "FAILURE" and normalize_level("-") is None


def test_every_format_names_a_message_group():
    for log_format in FORMATS:
        assert {"message", "content"} & set(log_format.regex.groupindex), log_format.name


@pytest.mark.parametrize("line", ["a" * 200_000, "a" * 60_000 + "=", "k=v " * 15_000, "1." * 100_000,
                                  "Dec 10 06:55:46 host " + "x " * 100_000, "[" * 200_000])
def test_hostile_lines_are_read_in_linear_time(line):
    """A bound, not a benchmark: a quadratic pattern took 3.4 s on a 20 KB run of letters (hours on 1 MB)."""
    import time

    started = time.perf_counter()
    read = Canonicalizer().read("s", line)
    LineMasker()(read.text)
    assert time.perf_counter() - started < 5.0


def test_a_structured_record_with_an_http_status_reads_its_status_as_its_event():
    """Caddy logs each 4xx and 5xx access record at ERROR: with the status as its event (as a plain access
    log's), a bot's 404s are one pattern of the rare-level rule, not a new ERROR for each path."""
    reader = Canonicalizer()
    caddy = reader.read("caddy", json.dumps({"level": "error", "ts": 1796429541.57, "logger": "http.log.access.log0",
                                             "msg": "handled request", "request": {"uri": "/wp-login.php"},
                                             "status": 404}))
    assert (caddy.level, caddy.event) == ("ERROR", "Not Found")  # the record's own level stays
    assert caddy.text.startswith("ERROR http.log.access.log0 Not Found: handled request")
    no_level = reader.read("app", 'msg="request done" method=GET path=/api status_code=503')
    assert (no_level.level, no_level.event) == ("ERROR", "Service Unavailable")  # the class gives a level
    assert reader.read("ecs", json.dumps({"message": "GET /x", "http": {"response": {"status_code": 499}}})).event \
        == "status 499"
    for status in (7, "ok", 1000, "9" * 5000, "²00", 600):  # not an HTTP status (nor a crash: 5,000 digits)
        assert reader.read("job", json.dumps({"msg": "job done", "status": status})).event is None


# --- a level in a column of the stream's own --------------------------------------------------------

ONBOARDING = Path(__file__).parent.parent / "benchmarks" / "data"


def test_a_stream_learns_the_token_that_holds_its_level_where_no_format_reads_it():
    """fail2ban writes its level after its logger and pid (``fail2ban.server [31596]: INFO ...``), a layout no
    format describes: the stream learns that its message's third token is its level; another stream of the
    same reader (Nagios: level words now and then, in no one place) learns none."""
    fail2ban = (ONBOARDING / "onboarding_fourteenth" / "fail2ban" / "normal.log").read_text().splitlines()
    nagios = (ONBOARDING / "onboarding_fifteenth" / "nagios" / "normal.log").read_text().splitlines()
    canonicalizer = Canonicalizer()
    first = [canonicalizer.read("fail2ban", line) for line in fail2ban[:4]]
    assert all(read.level is None for read in first)  # too few lines yet to tell a column
    reads = [canonicalizer.read("fail2ban", line) for line in fail2ban[4:400]]
    levels = [re.search(r"\]: (\w+)", line).group(1) for line in fail2ban[4:400]]
    assert [read.level for read in reads] == [normalize_level(level) for level in levels]
    assert reads[-1].message.startswith("fail2ban.") and reads[-1].message.split()[2] not in levels
    assert {read.format for read in reads} == {"iso_prefix"}
    nagios_reads = [canonicalizer.read("nagios", line) for line in nagios[:400]]
    assert any(re.search(r"\b(WARNING|CRITICAL)\b", line) for line in nagios[:400])
    assert all(read.level is None for read in nagios_reads)
    # a line of the fail2ban stream whose column holds no level word keeps its message whole
    odd = canonicalizer.read("fail2ban", "2026-12-06 08:59:18,124 fail2ban.server [31596]: restarting now")
    assert odd.level is None and odd.message == "fail2ban.server [31596]: restarting now"


def test_a_stream_learns_the_token_that_holds_its_http_status_where_no_format_reads_it():
    """Access records in a layout the reader has no format for (here varnishncsa's, read by a reader that knows
    only the formats of no one program): once 50 lines have shown a usual status at one token, that token's
    status gives the level and event, so a 404 and a 503 do not read like a 200. SMTP replies (Postfix's
    ``250 2.0.0 Ok``) and a column of durations are no status column."""
    from logstream.canonical.canonicalizer import PARSERS
    generic = tuple(p for p in PARSERS if p.name in ("json", "logfmt", "syslog", "iso_prefix"))
    varnish = (ONBOARDING / "onboarding_sixth" / "varnish" / "normal.log").read_text().splitlines()
    canonicalizer = Canonicalizer(parsers=generic)
    first = [canonicalizer.read("varnish", line) for line in varnish[:49]]
    assert all(read.level is None and read.event is None for read in first)  # not settled yet
    reads = [canonicalizer.read("varnish", line) for line in varnish[49:1000]]
    statuses = [re.search(r'" (\d{3}) ', line).group(1) for line in varnish[49:1000]]
    assert {read.format for read in reads} == {WHOLE}
    assert [(read.level, read.event) for read in reads] == [http_status(status) for status in statuses]
    assert {"WARN", "INFO"} <= {read.level for read in reads}
    line = varnish[0].replace('" 200 ', '" 503 ')
    assert canonicalizer.read("varnish", line).level == "ERROR"
    postfix = (ONBOARDING / "onboarding_fifth" / "postfix" / "normal.log").read_text().splitlines()
    durations = [f"worker {i % 7} finished job {i} in {100 + i * 37 % 500} ms" for i in range(200)]
    for stream, lines in (("postfix", postfix[:2000]), ("jobs", durations)):
        assert all(canonicalizer.read(stream, line).event is None for line in lines)


def test_logstream_formats_shows_the_columns_a_file_was_learned_to_hold_its_level_in(capsys):
    """``logstream formats FILE`` reads enough lines for the stream to learn its level column, says which
    token it is, and shows the first lines as the stream now reads them (their level out of the message)."""
    from logstream.cli import main

    path = ONBOARDING / "onboarding_fourteenth" / "fail2ban" / "normal.log"
    assert main(["formats", str(path), "--lines", "3"]) == 0
    out = capsys.readouterr().out
    assert f"{path}: iso_prefix; its level is token 3 of the message" in out
    reads = [line.split("reads: ", 1)[1] for line in out.splitlines() if "reads: " in line]
    levels = [re.search(r"\]: (\w+)", line).group(1) for line in path.read_text().splitlines()[:3]]
    assert len(reads) == 3 and [r.split(":", 1)[0] for r in reads] == [normalize_level(lv) for lv in levels]
