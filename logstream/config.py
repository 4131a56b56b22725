"""The one typed configuration of logstream.

Every entry point (the CLI, the Faust worker, the tailer, the demo, the tests, the compose file)
reads a ``Settings``. Values come, highest priority first, from keyword arguments, environment
variables (``LOGSTREAM_`` prefix, ``__`` between levels: ``LOGSTREAM_KAFKA__BOOTSTRAP_SERVERS``),
a YAML file (``--config`` or ``LOGSTREAM_CONFIG``, else the user's ``~/.config/logstream/logstream.yaml``
if there is one), then the defaults below.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

PACKAGE_DIR = Path(__file__).resolve().parent
DEFAULT_MODEL_DIR = PACKAGE_DIR / "assets" / "default-model"


def user_config_path() -> Path:
    """The user's own settings file, read when no --config or LOGSTREAM_CONFIG is given (``logstream
    calibrate`` points it at the models it makes)."""
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "logstream" / "logstream.yaml"


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)  # errors never print a secret


class ModelSettings(Section):
    path: Path = Field(DEFAULT_MODEL_DIR, description="local Hugging Face checkpoint directory")
    device: str = Field("auto", description="auto (cuda if present), cpu, cuda, cuda:1, ...")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    threads: int | None = Field(None, ge=1, description="CPU threads for torch; none: one less than the "
                                "machine's cores (at least 1, at most 8), leaving a core to Kafka and the event loop")

    def torch_threads(self) -> int:
        """The CPU thread count to give torch. Oversubscribed OpenMP threads spin against each other,
        so on a small machine shared with Kafka clients and a broker, fewer threads are faster."""
        if self.threads:
            return self.threads
        return max(1, min(8, (os.cpu_count() or 2) - 1))


class CacheSettings(Section):
    """Stream windows (``logstream.cache``): pages of keys and values in a pool, and the tiers behind it
    (``logstream.cache.pages`` says in which order memory is made room in, and why)."""

    window_tokens: int = Field(2048, ge=1, description="L: tokens of its own history each stream keeps")
    slots: int | None = Field(None, ge=1, description="size the pool in full windows instead of bytes")
    pool_bytes: int | None = Field(2 << 30, ge=1, description="memory for the pages of resident windows (the "
                                   "GPU's on a GPU, else host memory); committed as pages are first used")
    page_tokens: int = Field(32, ge=1, description="tokens per page: a stream holds the pages its history fills")
    layout: Literal["paged", "slots"] = Field("paged", description="slots: the layout pages replaced (a 2048-token "
                                              "slot per resident stream, the rest on the host tier), kept to "
                                              "compare with (benchmarks/streams.py)")
    kv_dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        "auto", description="how keys and values are stored; auto: bfloat16 for a float32 model (half the "
        "memory, measured in benchmarks/results/streams.md)")
    host_bytes: int | None = Field(None, ge=0, description="host memory for windows moved out of a GPU's pool "
                                   "(pinned); default 2 GiB on a GPU, none on a CPU (the pool is host memory)")
    shrink_to: int | None = Field(512, ge=1, description="under memory pressure, cold windows first keep only "
                                  "their last this many tokens (none, or the window or more: never shrink)")
    disk_bytes: int = Field(0, ge=0, description="a disk tier of this many bytes (memory-mapped, under "
                            "cache.disk_dir) for cold windows when memory is full; 0: none, forget instead")
    disk_dir: Path | None = Field(None, description="where the disk tier lives; default <worker.data_dir>/kv")
    max_chunk_tokens: int = Field(512, ge=1, description="longer chunks are split (exactly) into pieces")
    max_batch_tokens: int = Field(8192, ge=1, description="padded tokens per forward pass")
    max_batch_rows: int = Field(64, ge=1, description="streams per forward pass")
    attention: Literal["auto", "triton", "torch"] = Field(
        "auto", description="auto: the Triton kernels of kernels/ on a CUDA device (paged layout, triton "
        "installed), torch's otherwise; triton or torch insist")
    sink_tokens: list[int] | None = Field(None, description="default: the model's BOS (or EOS) token")
    preamble: bool = Field(True, description="prime the sink prefix with the model's pattern preamble")

    def engine_config(self, disk_dir: Path | None = None):
        """The ``logstream.cache.EngineConfig`` these settings describe (``disk_dir``: where the disk tier
        goes when ``cache.disk_dir`` is not set)."""
        from .cache import EngineConfig  # imports torch: only when an engine is built

        disk = self.disk_dir or disk_dir
        if self.disk_bytes and disk is None:
            raise ValueError("cache.disk_bytes needs cache.disk_dir (LOGSTREAM_CACHE__DISK_DIR)")
        return EngineConfig(window=self.window_tokens, slots=self.slots, layout=self.layout,
                            pool_bytes=None if self.slots is not None else self.pool_bytes,
                            host_bytes="auto" if self.host_bytes is None else self.host_bytes,
                            max_chunk_tokens=self.max_chunk_tokens, max_batch_tokens=self.max_batch_tokens,
                            page_tokens=self.page_tokens, kv_dtype=self.kv_dtype, shrink_to=self.shrink_to,
                            disk_dir=str(disk) if disk and self.disk_bytes else None, disk_bytes=self.disk_bytes,
                            max_batch_rows=self.max_batch_rows, attention=self.attention)



# Words that say a line reports a problem, whatever level its program gave it (nginx logs a refused
# TLS handshake at info, Python tracebacks reach journald at info): the kind of list Grafana and
# Elastic use to infer a level from a message. An "error log" is a file, not a problem (PHP-FPM's
# "error log file re-opened" at each log rotation).
PROBLEM_WORDS = (r"\b(?:errors?(?! log(?:s|ging)?\b)|fail(?:s|ed|ure|ing)?|fatal|panic(?:s|ked|king)?|exception|traceback|backtrace|"
                 r"problems?|conflict(?:s|ing)?|abort(?:ed|ing)?|"
                 r"crash(?:ed)?|killed|denied|refus(?:e[sd]?|ing)|forbidden|unauthori[sz]ed|not authori[sz]ed|not permitted|"
                 r"invalid|illegal|corrupt(?:ed|ion)?|oversized?|exceeded|"
                 r"cannot|can't|unable|timed out|timeout(?!\s+(?:<N\d+>|\d)|\s*:\s*[A-Za-z-]*(?:<N\d+>|\d+)\w*\s*(?:$|[,;]))|unreachable|too (?:large|long|many|big)|out of memory|"
                 r"no space|segfault|overflow|deadlock|reset by peer|"
                 # what the fifth corpus's first run missed: postfix's rejects and deferrals, sshd's and
                 # dnsmasq's bad options, dnsmasq's unsupported requests and rebind attacks
                 r"reject(?:s|ed|ion)?|bad|deferred|unsupported|improper|attacks?|not known|"
                 # the rest of the field's usual vocabulary, added before the sixth corpus's first run (sshd's
                 # dropped and throttled connections and dovecot's password mismatches were the studied misses)
                 r"could not|couldn't|not found|mismatch(?:es|ed)?|drop(?:s|ped|ping)?|throttl(?:e|ed|es|ing)|"
                 r"unavailable|exhausted|overload(?:ed)?|insufficient|unrecogni[sz]ed|violat(?:ion|ions|ed)|"
                 r"giving up|gave up|unhealthy|degraded|misconfigur(?:ed|ation)|"
                 # what the sixth and blind corpora's study added: slapd's schema errors and refusals, a
                 # setting out of bounds (memcached's "must be greater than 0", pydantic's "should be"), tasks
                 # cancelled by an outage, a bug report; and, after the seventh corpus's held-out run, an address
                 # or name already in use (ProFTPD's restart on a taken port); after the eighth corpus's held-out
                 # run, FreeRADIUS's "Login incorrect" and rsync's "unknown module" (not a client whose name is
                 # not known: Postfix's "connect from unknown[IP]", mosquitto's "Client <unknown>", Prosody's
                 # "session for <(unknown)@host>"; nor a field whose value is not known: InfluxDB's start-up
                 # "branch=unknown commit=unknown")
                 r"undefined|not allowed|expired|(?:must|should) (?:not )?be|"
                 # (not what a person cancelled: Icinga's "Removed downtime ... (Reason: cancelled by user)")
                 r"cancel(?:l?ed|ling|lation)(?! by (?:the |an? )?(?:user|admin(?:istrator)?|operator)\b)|bugs?|"
                 r"already in use|incorrect|(?<![<=])unknown(?![\[)])|"
                 # after the sixteenth corpus's held-out run: Monit's bad control files at a restart ("permission
                 # 0644 is wrong", "Program does not exist"); in no normal line of the sixteen corpora but Apache's
                 # info-level "File does not exist" for a missing page, which turns routine as its "not found" would
                 r"wrong|(?:does not|doesn't|did not|didn't) exist|"
                 # after the ninth corpus's held-out run: a DNS server's failure reply (PowerDNS's "sending out
                 # servfail"; unbound's reply lines read SERVFAIL as their level already)
                 r"servfail|"
                 # after the tenth corpus's held-out run: a job or a thread that no longer moves (CUPS's "Marking
                 # stuck job as completed"; not a call hung up)
                 r"stuck|hung(?! ?up)|"
                 # after the eleventh corpus's held-out run: a connection or a lock left behind (NATS's "Stale
                 # Client Connection - Closing", at debug level)
                 r"stale|"
                 # before the twelfth corpus's held-out run, from the seventh's ProFTPD ("USER admin: no such user
                 # found"): the ENOENT phrase (No such file or directory, no such user, host or object)
                 r"no such|"
                 # after the twelfth: a limit or a requirement not met (ngIRCd's "Value of ... exceeds 30!" and
                 # "too low!", OpenVPN's "would exceed maximum number of clients", Slurm's "Requested node
                 # configuration is not available", "can not be satisfied", ngIRCd's "Server not configured here")
                 r"exceeds|exceeding|would exceed|too (?:low|small|short|few|high|slow)|can not|not (?:available|configured)|"
                 r"never satisfied|"
                 # after the fourteenth corpus's held-out run: a request refused by a rule (Dante's "blocked by
                 # higher-level socks-rule"; privoxy's ad-blocking "Crunch: Blocked:" is learned as normal early),
                 # a peer that does not fit (Dropbear's "Incompatible remote version")
                 r"blocked|incompatible|"
                 # after the fifteenth corpus's held-out run: what the field writes of bad input and of a peer or
                 # a step that did not behave (svnserve's "Malformed network data", "Network connection closed
                 # unexpectedly", "contains unexpected non-digit"), and the upper-case ERR that marks an error in
                 # a line's fields (svnserve's "... ERR - 0 210002 ...", a Redis or POP3 "-ERR" reply); a client
                 # flooding a server (InspIRCd's "Excess Flood" quits; in no normal line of the fifteen corpora)
                 r"malformed|unexpected(?:ly)?|(?-i:ERR)|flood(?:s|ed|ing)?|"
                 # before the seventeenth: the rest of the C library's error strings (strerror) that name a bad
                 # outcome in words not above (InfluxDB's "mkdir ...: not a directory" at a bad start), and a
                 # setting given twice (a TOML "Key 'data' has already been defined"); not "not supported", a
                 # capability a program lacks (coturn's "MongoDB is not supported" and "socket: Protocol not
                 # supported" at every start: 6 more false alerts on the ninth corpus, measured)
                 r"not a directory|is a directory|directory not empty|file exists|read-only file system|"
                 r"(?:device or resource|text file) busy|no route to host|host is down|"
                 r"out of range|already (?:been )?defined|"
                 # after the eighteenth corpus's held-out run: a peer that stopped answering (tinc's "falcon didn't
                 # respond to PING in 5 seconds", Slurm's "Node not responding"; in no normal line of the eighteen
                 # corpora)
                 r"(?:didn't|did not|doesn't|does not|not) respond(?:ing)?|no response|"
                 # studied after the twentieth corpus's held-out run: what does not hold together (snmpd's "Received
                 # broken packet", ZooKeeper's quorum "Connection broken for id ..."; "broken pipe" before; not any
                 # "broken": SpamAssassin traces each mail's subject, "Re: build broken on main") and data that is not
                 # what it claims (tinc's "Bogus data received", "Bogus compression level!"), and data cut short
                 # (Redis's "short read while loading the AOF file", "Truncating the AOF", Icinga's "TLS stream was
                 # truncated"; in no normal line of the twenty corpora)
                 r"broken (?:pipe|packet|data|connection|message|frame|record|header|request|response|stream)s?|"
                 r"(?:is|was|are|were|been|connection) broken|bogus|truncat(?:ed|ing|ion)|short (?:read|write)|"
                 # and a refusal written as a plain finding (git daemon's "'/srv/git/x.git' does not appear to be a
                 # git repository" for a missing, corrupt or escaping path; in no normal line of the twenty corpora)
                 r"(?:does not|doesn't|did not|didn't|not) (?:appear|seem) to be|"
                 # and a limit reached (bgpd's "(Cease/Maximum Number of Prefixes Reached)", dnsmasq's "Maximum number
                 # of concurrent DNS queries reached", Icecast's "maximum source limit reached"; in no normal line of
                 # the twenty corpora but coturn's "Allocation Quota Reached", which reads "error 486" too)
                 r"(?:maximum|max|limit|quota)(?: [\w-]+){0,5}? reached|"
                 # and a parser's complaint (InfluxDB's TOML "expected '.' or ']' to end table name, but got '\n'
                 # instead", NATS's, Redis's "Protocol error (expected $ but got something else)"), and a backend
                 # marked down (dnsdist's "Marking downstream ns1 (...) as 'down'"); in no normal line of the twenty
                 r"expected\b.{1,60}? but (?:got|found|received|saw)|as ['\"]?down|"
                 # and a program that answers with its usage, a command line it could not take (git daemon's
                 # "usage: git daemon [--verbose] ..." when started with a bad option), a lookup that found no one
                 # (Kamailio's "INVITE ... -> sip:kevin@...: no contact registered") and a command a list does not
                 # allow (ZooKeeper's "Command crst is not executed because it is not in the whitelist"); in no
                 # normal line of the twenty corpora
                 r"usage(?=: [\w./-]+(?: [\w./-]+)* \[-)|no contacts? registered|"
                 r"not (?:in (?:the )?)?(?:white|allow)[ -]?list(?:ed)?)\b")
# ("timeout" followed by its value names a setting: ZooKeeper's "Established session ... with negotiated timeout
# 10000", or a key and its value ending a clause ("timeout: 30s,", UPnP's "Timeout: Second-1800" header, which
# MiniDLNA traces with each subscription; "timeout=30s" is a key, never a problem word); a timeout that happened
# reads "timed out", "timeout while ...", "timeout after 30 s", "Ping timeout: 120 seconds")
# ids of entities whose lives are followed (``logstream.scoring.flows``): an HDFS block, a ZooKeeper session
# (``0x...``), a request, queue or trace id of 8 or more hex digits in one case with a letter and a digit in it
# (``dba9b65e``, Postfix's ``4F2A1B3C9D``; not a date or a count, not a word)
FLOW_IDS = (r"\bblk_-?\d+\b|\b0x[0-9a-fA-F]{6,}\b|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{8,}\b|"
            r"\b(?=[0-9A-F]*[A-F])(?=[0-9A-F]*\d)[0-9A-F]{8,}\b")
# a success, or a program starting or stopping in order: what HAProxy and Redis log at WARNING on every
# reload and restart (``UP`` in capitals only: "up" is in "valid up to", "set up", "up to date")
BENIGN_WORDS = (r"\b(?:succeeded|success(?:ful|fully)?|passed|completed|starting|started|stopped|stopping|"
                r"exiting|shut(?:ting)? down|shutdown|loaded|initiali[sz]ed|ready|bye|"
                # a stop or reload that was asked for (Prosody's "Received SIGTERM", Supervisor's "received
                # SIGHUP indicating restart request", Dovecot's "SIGHUP received - reloading configuration",
                # which it writes at WARNING)
                r"(?:received|caught|got) SIG(?:TERM|INT|QUIT|HUP)|SIG(?:TERM|INT|QUIT|HUP) received|"
                r"reload(?:ing|ed)|"
                # a notice that something will stop working some day (CUPS at each printer it adds)
                r"deprecated|deprecation)\b|(?-i:\bUP\b)")


class AdaptiveSettings(Section):
    """How alert thresholds adapt to each source (``logstream.scoring.adaptive``)."""

    enabled: bool = Field(True, description="adapt thresholds per source and template; off: the model card's "
                          "calibrated thresholds (or scoring.threshold) for every line")
    source_by: Literal["format", "stream"] = Field("format", description="what a source is: 'format' (streams read in one log format "
                           "share what they learn) or 'stream' (each stream on its own)")
    cold_start_lines: int = Field(200, ge=0, description="a new source's first lines: its score thresholds are not "
                                  "learned yet; only the model's calibrated threshold (where it holds) and the "
                                  "unseen-problem rule can alert")
    familiar_share: float = Field(0.002, ge=0, le=1, description="the model's calibrated threshold holds on a "
                                  "source (and applies to it) while at most this share of the source's latest "
                                  "lines score above it")
    history: int = Field(256, ge=8, description="recent normal scores kept per template")
    min_template_lines: int = Field(20, ge=1, description="normal lines a template needs for its own threshold")
    quantile: float = Field(0.999, gt=0, lt=1, description="of a template's recent normal scores")
    margin: float = Field(3.0, ge=0, description="nats above the quantile, at least")
    iqr_margin: float = Field(3.0, ge=0, description="interquartile ranges above the quantile, if wider")
    novel_history: int = Field(512, ge=8, description="recent new-template scores kept per source")
    novel_quantile: float = Field(0.999, gt=0, lt=1, description="of the source's recent new-template scores")
    feedback_margin: float = Field(3.0, ge=0, description="nats above a marked-normal line before alerting again")
    rare_level_share: float = Field(0.005, ge=0, le=1, description="a line at a level other than TRACE, DEBUG, "
                                    "INFO or NOTICE alerts when that level is under this share of the source's "
                                    "normal lines (0 turns the rule off)")
    similarity: float = Field(0.7, gt=0, le=1, description="drain3 similarity for online template clustering "
                              "(0.5 put PostgreSQL's \"parameter ... cannot be changed\" lines in its SELECT statements' "
                              "template, where they scored far above: measured, onboarding benchmark)")
    problem_words: str = Field(
        PROBLEM_WORDS, description="regex (case-insensitive) of words that make a line read as a problem whatever "
        "its level: such a line, or one at a level other than TRACE/DEBUG/INFO/NOTICE, alerts while its pattern "
        "has never been seen with the same problem words in a normal line of its source ('' turns the rule off)")
    benign_words: str = Field(
        BENIGN_WORDS, description="regex (case-insensitive) of words that report a success or an orderly start or "
        "stop ('succeeded', 'is UP', 'stopped', 'ready'): a line at a level other than TRACE/DEBUG/INFO/NOTICE with "
        "one of them and no word of a bad outcome (a problem word, 'lost', 'down', 'terminated', 'signal', "
        "'unexpectedly', 'not expected') is no news by its level alone ('' turns this off): HAProxy logs every reload at "
        "WARNING, Redis every restart")
    problem_similarity: float = Field(0.7, gt=0, le=1, description="drain3 similarity of the patterns the "
                                      "problem rule compares ('Connection refused' and 'No such file' lines share "
                                      "most of their words)")
    problem_routine_episodes: int = Field(20, ge=0, description="a problem pattern or rare level that has come "
                                          "back in this many episodes in all without being learned as normal is "
                                          "routine for its source for good (0: never for good)")
    quiet_routine_episodes: int = Field(5, ge=0, description="the same for a problem pattern in DEBUG or TRACE "
                                        "lines: a program's tracing of what it does (Kea's `reclamation of expired "
                                        "leases` every few minutes, etcd's canceled watches) turns routine sooner "
                                        "(0: as other levels)")
    info_routine_episodes: int = Field(0, ge=0, description="the same for a problem pattern in lines its "
                                       "program wrote at INFO or NOTICE, for programs that grade their lines "
                                       "(nghttpx's `Idle connection timeout` every few hundred lines: 8.4 -> 2.0 "
                                       "false alerts per 1,000 at 5). Off by default: Supervisor writes `gave up: "
                                       "... entered FATAL state` at INFO (benchmarks/results/adaptive_sweep.md; "
                                       "0: as WARN and worse)")
    routine_episodes: int = Field(5, ge=0, description="a problem pattern or rare level that came back in this "
                                  "many episodes (bursts: its lines within `routine_gap` lines of each other) "
                                  "within the source's last `routine_window` lines, or in one episode that lasted "
                                  "`routine_episodes` x `routine_gap` lines (a favicon 404 every few lines), is "
                                  "routine until it has been quiet for `routine_window` lines; one that strikes "
                                  "now and then stays news (0 turns this off)")
    routine_window: int = Field(1000, ge=1, description="lines of a source over which `routine_episodes` count "
                                "(of its stream, while one stream alone has shown the pattern)")
    info_routine_window: int = Field(3000, ge=0, description="the same for a problem pattern in lines its program "
                                     "wrote at INFO or NOTICE, by its own account no trouble: a slower pace is "
                                     "routine there (nghttpx's `Idle connection timeout` every ~500 lines: 8.4 -> "
                                     "2.0 false alerts per 1,000, no event missed on the sixteen corpora; 5000 "
                                     "missed one of NSD's; 0: `routine_window`)")
    sequence_episodes: int = Field(5, ge=0, description="a problem pattern or rare level whose latest this many "
                                   "episodes each came right after the same line pattern of its stream, and that "
                                   "comes after it again, is a step the source takes (Icecast warns of its stream "
                                   "type right after each source logs in), not news (0 turns this off)")
    sequence_share: float = Field(0.01, ge=0, le=1, description="the most of a source's lines the line pattern "
                                  "before such a step may have: after a common line, problems come by chance")
    sequence_follow_share: float = Field(0.05, ge=0, le=1, description="the least share of that line pattern's "
                                         "lines such a step came right after: Samba writes the same header before "
                                         "every authentication, hundreds of successes and a few failures; its "
                                         "failures are a branch it takes now and then, not a step of its routine")
    episode_alerts: int = Field(3, ge=0, description="lines of one burst of a problem pattern that alert in each "
                                "stream of the source; the rest of the burst is the same news (not learned as "
                                "normal; the burst still counts as one episode). 0: every line of a burst alerts")
    later_episode_alerts: int = Field(1, ge=0, description="the same for each later burst of a pattern that has "
                                      "alerted before: its comeback is news, its first line says it (tinc's "
                                      "'Received UDP packet from unknown source' every few hundred lines alerted 3 "
                                      "lines a time, 27 false alerts; 196 -> 154 false alerts in the thirteen "
                                      "replayed corpora for 2 of 1,216 events missed: benchmarks/results/adaptive_sweep_later.md; BGL "
                                      "chronological F1 at the live threshold 0.522 -> 0.423: benchmarks/results/"
                                      "detection.md). 0: as `episode_alerts`")
    routine_gap: int = Field(20, ge=1, description="lines of a source without the pattern that end an episode")
    incident_word_share: float = Field(0.01, ge=0, le=1, description="a stream's line soon after one of its "
                                       "alerts (`incident_lines`), in another pattern, that shares a rare word "
                                       "with the alert (held by at most this share of the source's normal lines; "
                                       "not a level, a word of the language, a short code nor a problem word) is "
                                       "that incident's line, "
                                       "not news of its own: Supervisor's `killing 'archiver' with SIGKILL` then "
                                       "`stopped: archiver (terminated by SIGKILL)` (logstream.scoring.incident; "
                                       "0 turns this off)")
    incident_lines: int = Field(4, ge=1, description="lines of a stream after one of its alerts within which a "
                                "line that names the alert's rare word, in another pattern, is that incident's "
                                "(`incident_word_share`): coturn writes a session's `TCP socket error` and, a line or "
                                "two of other sessions later, its `closed ... reason: TCP socket buffer operation "
                                "error` (1: the next line only)")
    startup_lines: int = Field(50, ge=0, description="lines of a source after a line that reports a start or stop "
                               "(and after its first line) that are its start-up: a line there without problem words "
                               "whose pattern the source also wrote in an earlier start-up, and never away from one, "
                               "is no news (a warning a program logs at every start). 0 turns this off")
    range_min_lines: int = Field(100, ge=0, description="normal lines a template's numeric field needs before a "
                                 "value far outside what it held alerts (0 turns the rule off)")
    range_factor: float = Field(10.0, gt=1, description="how far outside a field's range a value alerts: above "
                                "this many times its greatest value (once nonzero), below its least over this "
                                "factor (a field never under 100 and within this factor of its least), or "
                                "negative where it never was")
    flow_ids: str = Field(FLOW_IDS, description="regex of the entity ids whose flows are followed (a request, "
                          "queue or session id in hex, an HDFS block): a line's step after its entity's previous "
                          "step in a pair its source never showed in a normal line alerts ('' turns the rule off)")
    flow_min_lines: int = Field(200, ge=0, description="entity lines a source needs before a new pair of steps "
                                "alerts")
    flow_quiet: int = Field(100, ge=1, description="times a step is followed (and at least a quarter of all its "
                            "follow-ups) without a new successor before a step never seen after it alerts: its "
                            "successors are settled")
    flow_max_branches: int = Field(4, ge=1, description="successors a step may have and still be judged: a "
                                   "workflow's next step is one of a few; after a step followed by anything "
                                   "(an id that is a time written in hex) nothing is out of order")
    flow_max_steps: int = Field(64, ge=1, description="lines of one entity that are followed: an id in more lines "
                                "than this (a boot or container id) names no flow")
    flow_name_share: float = Field(0.25, ge=0, le=1, description="entities named by a word (a package "
                                   "'libssl3:amd64', a host, a file) are followed too, except a name in more than "
                                   "this share of its source's entity lines (a constant, not an entity; 0 turns "
                                   "named entities off)")
    flow_entities: int = Field(10_000, ge=1, description="entities whose latest step is kept per source (least "
                               "recent forgotten: one that comes back starts anew); about 190 bytes each")
    max_templates: int = Field(5000, ge=1, description="templates kept per source (least recent forgotten)")
    max_sources: int = Field(1000, ge=1, description="sources kept (least recent forgotten)")

    @field_validator("flow_ids")
    @classmethod
    def _flow_ids_compile(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"scoring.adaptive.flow_ids is not a valid regex ({exc}): {value!r}") from None
        return value


class SessionSettings(Section):
    """Keyed streams as sessions (``logstream.scoring.sessions``): with a model trained on whole
    sessions (``logstream train --sessions``), streams keyed by ``scoring.stream_key`` are judged
    as sessions, their ends scored."""

    enabled: bool = Field(True, description="judge keyed streams as sessions when the model was trained on "
                          "whole sessions; off: keyed streams are judged line by line and never end")
    idle_s: float = Field(30.0, gt=0, description="a session ends when it has had no line for this long; its "
                          "end is scored and its window freed")
    end_pattern: str | None = Field(None, description="regex of a line that ends its session at once (e.g. "
                                    "'Deleting block'), besides going quiet")
    check_interval_s: float = Field(1.0, gt=0, description="how often the worker looks for quiet sessions")
    explain: bool = Field(True, description="name the line the model expected when a session ends abnormally")

    @field_validator("end_pattern")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"scoring.sessions.end_pattern is not a valid regex ({exc}): {value!r}") from None
        return value


class ScoringSettings(Section):
    stream_key: str | None = Field(
        None, description="regex whose first match (or group 1) keys the stream inside a line, e.g. blk_-?\\d+; "
        "default: the Kafka message key")
    threshold: float | None = Field(None, description="override the model's calibrated threshold")
    adaptive: AdaptiveSettings = AdaptiveSettings()
    sessions: SessionSettings = SessionSettings()
    warmup_tokens: int = Field(0, ge=0, description="tokens a new stream must see before it may alert at all "
                               "(on top of the calibrated warm-up threshold, which applies from the first line)")

    def adaptive_thresholds(self):
        """A fresh ``AdaptiveThresholds`` for a scorer, or None when thresholds are fixed."""
        if not self.adaptive.enabled or self.threshold is not None:
            return None
        from .scoring.adaptive import AdaptiveThresholds

        return AdaptiveThresholds(self.adaptive)


class FormatPin(Section):
    """Read the streams whose id matches ``stream`` with one format, or with a regex of your own."""

    stream: str = Field(".*", description="regex the stream id must match in full (default: every stream)")
    format: str | None = Field(None, description="a format name (`logstream formats` lists them), or 'whole' "
                               "to read lines as they are")
    regex: str | None = Field(None, description="a regex with named groups: 'message' (required), and any of "
                              "timestamp, host, process, pid, level, component")

    @model_validator(mode="after")
    def _valid(self):
        self.pin()  # a misspelled format or a broken regex fails at start, with the reason
        return self

    def pin(self):
        from .canonical import make_pin

        return make_pin(self.stream, self.format, self.regex)


class ParsingSettings(Section):
    detect_lines: int = Field(8, ge=1, description="a stream's format is chosen by the votes of its first lines")
    formats: list[FormatPin] = Field([], description="streams pinned to a format or a regex; the first pin "
                                     "whose stream pattern matches wins; other streams are detected")

    def pins(self, every_stream_format: str | None = None) -> tuple:
        """The configured pins, after one that reads every stream with ``every_stream_format`` if given
        (a command's ``--format``)."""
        first = [FormatPin(format=every_stream_format)] if every_stream_format else []
        return tuple(p.pin() for p in first + self.formats)

    def canonicalizer(self, every_stream_format: str | None = None):
        """The ``logstream.canonical.Canonicalizer`` these settings describe."""
        from .canonical import Canonicalizer

        return Canonicalizer(self.pins(every_stream_format), detect_lines=self.detect_lines)


class AdaptSettings(Section):
    """Continual fine-tuning: the model keeps learning the sources it serves (``logstream.adapt``)."""

    enabled: bool = Field(True, description="fine-tune a copy of the model on the live sources in the background")
    store_dir: Path | None = Field(None, description="model versions (adapted models, rollback); none: "
                                   "<worker.data_dir>/models")
    first_after_lines: int = Field(500, ge=50, description="a source the model does not know well is first "
                                   "learned after this many of its lines")
    max_gap_lines: int = Field(8000, ge=50, description="lines between a source's rounds double up to this")
    sample_lines: int = Field(2000, ge=50, description="recent normal lines kept per source to learn from")
    relearn_lines: int = Field(400, ge=0, description="after a new model is swapped in, each source's latest "
                               "normal lines are scored again: its thresholds re-learned, its window re-warmed")
    steps: int = Field(40, ge=1, description="optimizer steps per round")
    context: int = Field(384, ge=32, description="tokens per training example")
    batch_size: int = Field(8, ge=1)
    learning_rate: float = Field(1e-3, gt=0)
    replay_share: float = Field(0.25, ge=0, lt=1, description="share of training tokens replayed from what the "
                                "model was first trained on, so it keeps what it knew")
    threads: int = Field(1, ge=1, description="CPU threads of the trainer process")
    nice: int = Field(10, ge=0, le=19, description="the trainer's CPU priority below the worker's")
    max_minutes: float = Field(10.0, gt=0, description="a round stops after this many minutes of its own running "
                               "(time paused for scoring does not count)")
    pause_above_ms: float | None = Field(250.0, gt=0, description="scoring first: the trainer is paused while "
                                         "micro-batches' oldest lines waited longer than this to be scored, from "
                                         "their Kafka timestamps (a producer whose clock runs behind, or that "
                                         "stamps records with the event's own time, makes lines look late) (on a "
                                         "small machine a running trainer slows scoring whatever its nice: "
                                         "benchmarks/results/trainer_gate_ab.md); none: never paused")
    resume_after_s: float = Field(5.0, gt=0, description="a paused trainer goes on once no batch was later than "
                                  "pause_above_ms for this long; a round paused for max_minutes in all is given up")
    check_interval_s: float = Field(5.0, gt=0, description="how often the worker checks for due rounds, finished "
                                    "rounds and rollbacks")

    def finetune_config(self):
        from pipelines.finetune import FinetuneConfig

        return FinetuneConfig(steps=self.steps, context=self.context, batch_size=self.batch_size,
                              learning_rate=self.learning_rate, replay_share=self.replay_share, threads=self.threads,
                              max_minutes=self.max_minutes)


class KafkaSettings(Section):
    bootstrap_servers: str | None = Field(None, description="host:port[,host:port]; none = embedded broker")
    input_topic: str = "logstream-lines"
    alerts_topic: str = "logstream-alerts"
    dead_letter_topic: str = "logstream-dead-letter"
    input_format: Literal["auto", "logstream", "vector", "fluentbit", "filebeat", "otlp", "json", "raw"] = Field(
        "auto", description="what the input topic's values are (logstream.service.shippers); auto: recognised "
        "by their shape")
    input_mapping: dict[str, str] = Field({}, description="where a shipper record's line, stream, file, host, "
                                          "timestamp and level are (dotted paths), over the preset's")
    feedback_topic: str = Field("logstream-feedback", description="operator feedback (alerts marked normal); "
                                "every worker reads all of it, from the beginning, at start")
    scores_topic: str | None = Field(None, description="if set, the worker publishes every score here "
                                     "(JSON, keyed by stream): tallies, benchmarks, debugging")
    partitions: int = Field(4, ge=1)
    replication_factor: int = Field(1, ge=1)
    consumer_group: str = "logstream-worker"
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = Field(
        "PLAINTEXT", description="how clients talk to the brokers: SSL for TLS, SASL_* for a user and password")
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] = "PLAIN"
    sasl_username: str | None = None
    sasl_password: SecretStr | None = Field(None, description="never printed; from a secret in production "
                                            "(LOGSTREAM_KAFKA__SASL_PASSWORD)")
    ssl_cafile: Path | None = Field(None, description="CA bundle the brokers' certificates are checked against; "
                                    "none: the system's")
    ssl_certfile: Path | None = Field(None, description="client certificate (mutual TLS)")
    ssl_keyfile: Path | None = Field(None, description="the client certificate's key")

    @model_validator(mode="after")
    def _security_complete(self) -> "KafkaSettings":
        if self.security_protocol.startswith("SASL") and not (self.sasl_username and self.sasl_password):
            raise ValueError(f"kafka.security_protocol {self.security_protocol} needs kafka.sasl_username and "
                             "kafka.sasl_password (LOGSTREAM_KAFKA__SASL_USERNAME, LOGSTREAM_KAFKA__SASL_PASSWORD)")
        if (self.ssl_certfile is None) != (self.ssl_keyfile is None):
            raise ValueError("kafka.ssl_certfile and kafka.ssl_keyfile go together (mutual TLS needs both)")
        return self

    def client_options(self) -> dict[str, Any]:
        """The connection and security keyword arguments of every aiokafka client logstream makes (the
        Faust worker gets the same through ``faust_credentials``)."""
        options: dict[str, Any] = {"bootstrap_servers": self.bootstrap_servers,
                                   "security_protocol": self.security_protocol}
        if self.security_protocol.startswith("SASL"):
            options |= {"sasl_mechanism": self.sasl_mechanism, "sasl_plain_username": self.sasl_username,
                        "sasl_plain_password": self.sasl_password.get_secret_value()}
        if self.security_protocol.endswith("SSL"):
            options["ssl_context"] = self.ssl_context()
        return options

    def ssl_context(self):
        from aiokafka.helpers import create_ssl_context

        for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
            path = getattr(self, name)
            if path is not None and not Path(path).is_file():
                raise ValueError(f"kafka.{name}: {path} is not a readable file")
        return create_ssl_context(cafile=self.ssl_cafile and str(self.ssl_cafile),
                                  certfile=self.ssl_certfile and str(self.ssl_certfile),
                                  keyfile=self.ssl_keyfile and str(self.ssl_keyfile))


def _http_url(value: str | None, what: str) -> str | None:
    """An http(s) URL with a host, checked at start: a bad one would dead-letter every alert later."""
    if value is None:
        return value
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 (raises on a port that is not a number)
    except ValueError as exc:
        raise ValueError(f"{what} is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{what} must be an http:// or https:// URL with a host, e.g. http://receiver:8080/hook")
    return value


class WebhookSettings(Section):
    url: str
    secret: str | None = Field(None, description="Standard Webhooks secret (whsec_<base64>)")
    format: Literal["standard", "alertmanager-webhook"] = "standard"

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        return _http_url(value, "alerts.webhooks[].url")

    @field_validator("secret")
    @classmethod
    def _secret(cls, value: str | None) -> str | None:
        from .alerts.signing import SECRET_PREFIX, secret_bytes

        if value is not None:
            if not value.startswith(SECRET_PREFIX):
                raise ValueError(f"alerts.webhooks[].secret must be a Standard Webhooks secret, "
                                 f"{SECRET_PREFIX}<base64 of 24 to 64 random bytes>")
            try:
                key = secret_bytes(value)
            except ValueError:
                raise ValueError(f"alerts.webhooks[].secret: what follows {SECRET_PREFIX} is not valid base64") from None
            if not 24 <= len(key) <= 64:
                raise ValueError(f"alerts.webhooks[].secret decodes to {len(key)} bytes; Standard Webhooks "
                                 "keys are 24 to 64 bytes")
        return value


class AlertSettings(Section):
    webhooks: list[WebhookSettings] = []
    alertmanager_url: str | None = Field(None, description="base URL; alerts go to POST /api/v2/alerts")
    retry_for_s: float = Field(600.0, gt=0, description="a delivery is retried (exponential backoff with jitter) "
                               "for this long after its first attempt before the alert is dead-lettered: a "
                               "receiver down for minutes still gets it")
    max_attempts: int | None = Field(None, ge=1, description="give up after this many attempts even within "
                                     "retry_for_s (none: no limit but the time)")
    backoff_initial_s: float = Field(0.5, gt=0)
    backoff_max_s: float = Field(30.0, gt=0)
    queue_size: int = Field(10_000, ge=1)
    group_window_s: float = Field(60.0, ge=0, description="same anomaly, same stream: one alert per window (on the "
                                  "clock and in the lines' own time: a backlog read in seconds is not one window)")
    template_min_similarity: float = Field(0.8, ge=0, le=1, description="an anomalous line is taken as an "
                                           "instance of its nearest known template (and grouped by it) only "
                                           "this similar to it; otherwise by the line itself, masked")
    max_groups: int = Field(10_000, ge=1, description="open alert groups kept; the oldest is evicted beyond")
    delivery_tasks: int = Field(4, ge=1, description="concurrent deliveries per sink")
    request_timeout_s: float = Field(10.0, gt=0, description="one delivery attempt, connect to last byte")
    retry_after_max_s: float = Field(300.0, gt=0, description="a longer Retry-After dead-letters the alert "
                                     "instead of blocking a delivery task")
    severity: str = Field("warning", description="severity label of alerts in Alertmanager formats")
    external_url: str | None = Field(None, description="link back to logstream (externalURL, generatorURL)")
    resolve_after_s: float = Field(300.0, gt=0, description="Alertmanager resolves an alert not re-sent "
                                   "for this long (endsAt)")

    @field_validator("alertmanager_url")
    @classmethod
    def _alertmanager_url(cls, value: str | None) -> str | None:
        return _http_url(value, "alerts.alertmanager_url")


class MetricsSettings(Section):
    port: int | None = Field(9464, description="port of /metrics, /healthz, /readyz and /feedback; none disables it")
    host: str = Field("127.0.0.1", description="address the worker's and the tailer's endpoints bind; the image "
                      "sets 0.0.0.0 (LOGSTREAM_METRICS__HOST), for a container's port is reached from outside it")


class WorkerSettings(Section):
    batch_size: int = Field(256, ge=1, description="lines per micro-batch")
    batch_within_s: float = Field(0.01, gt=0, description="longest wait to fill a micro-batch (the wait starts "
                                  "again after each batch; with these defaults benchmarks/results/reliability.md "
                                  "measured p50 ingest-to-score 62 ms at 25 % of rated throughput)")
    fetch_wait_ms: int = Field(20, ge=0, le=30_000, description="longest wait of a consumer fetch for new "
                               "lines (Faust's own driver waits 1.5 s: measured p50 ingest-to-alert 540 ms at 50 "
                               "lines/s, 100 ms with 100)")
    commit_interval_s: float = Field(2.8, gt=0, description="how often scored offsets are committed")
    session_timeout_s: float = Field(10.0, ge=3, description="a worker not heard from for this long leaves "
                                     "the consumer group and its partitions move (the bundled broker also "
                                     "takes half of this to complete a group join)")
    alert_flush_interval_s: float = Field(1.0, gt=0, description="how often grouped alerts' count "
                                          "updates are checked for")
    lag_interval_s: float = Field(5.0, gt=0, description="how often the consumer lag gauge is updated")
    broker_check_interval_s: float = Field(2.0, gt=0, description="how often the worker asks the broker for its "
                                           "metadata: /readyz says not ready, and logstream_broker_up reads 0, "
                                           "while it does not answer within this long")
    state_interval_s: float = Field(60.0, gt=0, description="how often what the adaptive thresholds learned is "
                                    "saved to data_dir (and at shutdown), so a restart is not a cold start")
    publish_timeout_s: float = Field(30.0, gt=0, description="longest wait for Kafka to acknowledge a "
                                     "record before it is sent again")
    publish_retry_for_s: float | None = Field(None, gt=0, description="how long records Kafka does not take are "
                                              "sent again before the worker stops without committing the batch; "
                                              "none: until the broker is back (readiness says not ready meanwhile)")
    shutdown_timeout_s: float = Field(10.0, ge=0, description="at shutdown, longest wait for the alert "
                                      "sinks to deliver what they hold (the rest is dead-lettered)")
    web_port: int | None = Field(None, description="Faust's own web server port; none disables it")
    data_dir: Path | None = Field(None, description="Faust's data directory, the model versions and, in a slot "
                                  "of each worker's own (workers/<n>), the adaptive thresholds' saved state and "
                                  "the messages in hand; none: one under the system temp directory")


class TailSettings(Section):
    checkpoint_path: Path = Field(Path("logstream-tail.checkpoint.json"), description="offsets, saved atomically")
    start_at: Literal["beginning", "end"] = Field("beginning", description="where to start a file never seen")
    max_line_bytes: int = Field(16_384, ge=64, description="longer lines are cut and marked truncated, by the "
                                "tailer and by the worker for lines from any producer")
    poll_interval_s: float = Field(0.2, gt=0)
    max_inflight_lines: int = Field(10_000, ge=1, description="unacknowledged lines before reading pauses")
    forget_after_s: float = Field(7 * 24 * 3600, gt=0, description="drop checkpoints of files gone this long")
    stream_from: Literal["path", "name", "host"] = Field("path", description="stream key: file path, file name, "
                                                          "or this host's name")
    rotate_wait_s: float = Field(5.0, ge=0, description="keep reading a file rotated away (renamed or deleted) "
                                 "until it has been quiet this long")
    checkpoint_interval_s: float = Field(1.0, gt=0, description="how often acknowledged offsets are saved")
    metrics_port: int | None = Field(9465, description="port of the tailer's own /metrics and /healthz (bound "
                                     "at metrics.host); none disables it; not served with --once")
    ack_timeout_s: float = Field(30.0, gt=0, description="longest wait for Kafka to acknowledge a line; past "
                                 "it the tailer starts again from its checkpoint (with --once: stops with an error)")
    reconnect_max_s: float = Field(30.0, gt=0, description="longest wait between attempts to reach Kafka again "
                                   "(1 s, doubling up to this)")


ENV_PREFIX = "LOGSTREAM_"
# variables of the project that are not settings (the set-up scripts', the evaluation cache, the tests')
NOT_SETTINGS = frozenset({"LOGSTREAM_CONFIG", "LOGSTREAM_EVAL_CACHE", "LOGSTREAM_EXTRAS", "LOGSTREAM_SKIP_APT",
                          "LOGSTREAM_SERVICES", "LOGSTREAM_TRAINER_PARENT", "LOGSTREAM_TRAINER_ARMED"})


class YamlSource(PydanticBaseSettingsSource):
    def __init__(self, settings_cls, path: Path | None):
        super().__init__(settings_cls)
        self.path = path

    def get_field_value(self, field, field_name):  # required by the base class, unused
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        if self.path is None:
            return {}
        if not self.path.exists():
            raise FileNotFoundError(f"config file {self.path} does not exist")
        try:
            data = yaml.safe_load(self.path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise ValueError(f"config file {self.path} is not valid YAML: {exc}") from None
        if not isinstance(data, dict):
            raise ValueError(f"config file {self.path} must hold a mapping of sections")
        return data


class Settings(BaseSettings):
    # "none" in the environment is what null is in YAML (adapt.pause_above_ms, metrics.port, ...)
    model_config = SettingsConfigDict(env_prefix="LOGSTREAM_", env_nested_delimiter="__", extra="forbid",
                                      hide_input_in_errors=True, env_parse_none_str="none")

    model: ModelSettings = ModelSettings()
    cache: CacheSettings = CacheSettings()
    scoring: ScoringSettings = ScoringSettings()
    parsing: ParsingSettings = ParsingSettings()
    adapt: AdaptSettings = AdaptSettings()
    kafka: KafkaSettings = KafkaSettings()
    alerts: AlertSettings = AlertSettings()
    metrics: MetricsSettings = MetricsSettings()
    worker: WorkerSettings = WorkerSettings()
    tail: TailSettings = TailSettings()

    def data_dir(self) -> Path:
        """The workers' directory (Faust's data, model versions, and each worker's slot: ``worker_slot``)."""
        import tempfile

        return self.worker.data_dir or Path(tempfile.gettempdir()) / f"logstream-worker-{self.kafka.consumer_group}"

    def model_store(self):
        """The store of adapted model versions (``logstream.adapt.ModelStore``)."""
        from .adapt.store import ModelStore

        return ModelStore(self.adapt.store_dir or self.data_dir() / "models", self.model.path)

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings,
                                   file_secret_settings):
        path = os.environ.get("LOGSTREAM_CONFIG")
        if path:
            return init_settings, env_settings, YamlSource(settings_cls, Path(path))
        user = user_config_path()
        return init_settings, env_settings, YamlSource(settings_cls, user if user.exists() else None)

    @model_validator(mode="before")
    @classmethod
    def _no_unknown_variables(cls, data: Any) -> Any:
        """A misspelled LOGSTREAM_ variable would otherwise be ignored without a word (pydantic reads only
        the sections it knows): say which, and what the sections are."""
        sections = set(cls.model_fields)
        unknown = sorted(name for name in os.environ if name.startswith(ENV_PREFIX)
                         and name not in NOT_SETTINGS and name[len(ENV_PREFIX):].split("__")[0].lower() not in sections)
        if unknown:
            raise ValueError(f"unknown setting {', '.join(unknown)}: settings are LOGSTREAM_<SECTION>__<FIELD> with "
                             f"a section of {', '.join(sorted(sections))} (LOGSTREAM_CONFIG names a YAML file)")
        return data

    @classmethod
    def load(cls, path: str | Path | None = None, **overrides) -> "Settings":
        """Settings from a YAML file (or $LOGSTREAM_CONFIG), the environment and overrides."""
        if path is None:
            return cls(**overrides)
        previous = os.environ.get("LOGSTREAM_CONFIG")
        os.environ["LOGSTREAM_CONFIG"] = str(path)
        try:
            return cls(**overrides)
        finally:
            if previous is None:
                del os.environ["LOGSTREAM_CONFIG"]
            else:
                os.environ["LOGSTREAM_CONFIG"] = previous
