#!/usr/bin/env python3
"""Generate the tenth onboarding corpus: real log lines written by real programs, grouped into events.

A tenth corpus built exactly like benchmarks/onboarding_ninth_data.py (same layout, same separation
rule, same event ids, the helpers of benchmarks/onboarding_heldout_data.py and of the earlier scripts
imported) from five programs that no other corpus uses.  Every line is the verbatim output of a program
started by this script on this machine; the script only *drives* the programs (clients it runs) and
*breaks* them (bad configs, killed processes, wrong passwords, garbage on the wire, exhausted limits,
timeouts, a step of a job made to fail...).  It never writes a log line itself.  Three of the five trace
multi-step work per named item (slurm jobs, celery tasks, cups print jobs); some of their breakages are
a step of that work failing or never happening (a job step that fails, a job killed on a dead node, a
dependent job that never runs, a task killed by its hard time limit or losing its pool process, a print
job whose filter crashes or that never reaches the printer).

Every errors.jsonl line carries an "event" id (unique within a source) grouping the lines written
by ONE occurrence of a breakage: one bad request or connection, one failed login, one failed job or
task, one outage, one bad restart.  The breakages are made one occurrence at a time, each in its own
time window followed by a pause for the program to finish logging about it; what the program logs
between two windows (recovery, restarting it) belongs to no event and is not kept.  Normal background
traffic keeps running during the breakages and is filtered out by the rule below.

Sources (prerequisites, Debian 12 packages: apt-get install -y --no-install-recommends slurmctld slurmd
slurm-client munge python3-celery python3-redis redis-server cups cups-client cups-bsd cups-filters
clamav-daemon rabbitmq-server; also util-linux and python3.  Celery and the AMQP clients run on Debian's
/usr/bin/python3, the other clients are the programs' own CLIs or python code in this script.  Nothing is
installed by this script, and no system service of these packages needs to run: each daemon is started
directly as a plain process, without systemd):

  slurm     Slurm 22.05 slurmctld (-D, its log file at SlurmctldDebug=debug2), with slurmd and munged of
            its own on the same host; the corpus is slurmctld's log:
            `[2026-12-05T20:38:29.990] _slurm_rpc_submit_batch_job: JobId=54 InitPrio=4294901759 usec=334`,
            `[...] sched: Allocate JobId=54 NodeList=vm #CPUs=1 Partition=batch`, `[...] _job_complete:
            JobId=54 WEXITSTATUS 0`, `[...] debug2: Processing RPC: REQUEST_JOB_INFO from UID=0`.
            Normal: sbatch / srun / scancel / scontrol / squeue / sinfo of 5 users: one-step jobs, jobs of
            2-4 srun steps, arrays, pipelines (afterok), interactive steps, held jobs released or cancelled,
            running jobs cancelled, queries; scontrol reconfigure, two clean restarts.
            Broken: job steps failing (exit codes, SIGSEGV), running jobs' processes killed, dependent
            jobs that can never run, submissions no partition takes, a failing prolog draining the node,
            RPCs signed with another cluster's munge key, garbage on the port, running jobs over their
            time limit (`Time limit exhausted for JobId=...`), the node dying with a job on it (`error:
            Nodes vm not responding, setting DOWN`), broken configs at a restart.
  celery    Celery 5.2 worker (-B, prefork, INFO, --logfile plus its stdout/stderr; redis broker):
            `[2026-12-05 20:44:12,459: INFO/MainProcess] Task shop_tasks.send_email[7005e6d4-...]
            received`, `[...: INFO/ForkPoolWorker-3] shop_tasks.reserve_stock[...]: order 41005: reserving 6
            items in berlin`, `[...: INFO/ForkPoolWorker-2] Task shop_tasks.send_email[...] succeeded in
            0.0318s: None`, `[...: INFO/Beat] Scheduler: Sending due task cleanup-sessions (...)`.
            Normal: a shop's producer sending order chains (stock, card with retries, invoice, mail),
            thumbnail groups, mails, delayed reminders, 3-step report exports, inventory syncs; two warm
            restarts.  Broken: a step of an export raising (tracebacks), retries exhausted, soft and hard
            time limits (`Hard time limit (6s) exceeded for ...`, the pool process killed), pool processes
            killed mid-task (WorkerLostError), unregistered tasks, malformed messages, the broker down,
            broken deploys / options at a restart.
  cups      CUPS 2.4 cupsd (-f, ErrorLog at LogLevel info, its stderr appended; 5 AppSocket printers served
            by python sinks): `I [05/Dec/2026:20:41:41 +0000] [Job 1] Queued on "labels" by "alice".`,
            `... [Job 1] Started filter /usr/lib/cups/filter/texttopdf (PID 10805)`, `... [Job 1] Started
            backend /usr/lib/cups/backend/socket (PID 10808)`, `... [Job 1] Job completed.`.
            Normal: lp / cancel / lpstat of 12 users (raw label jobs, text jobs through the PostScript and
            PCL drivers, a class, holds, priorities), an admin (cupsdisable / cupsenable, lpadmin options,
            lpmove, default printer), SIGHUP reloads, two clean restarts.
            Broken: damaged PDFs (`E [...] [Job 7] Job stopped due to filter errors; ...` followed by the
            job's recorded debug messages), the Ghostscript step of a job killed, printers switched off
            (`W [...] [Job 2] The printer may not exist or is unavailable at this time.`), jammed printers
            (`[Job 5] Marking stuck job as completed after 5 seconds.`), admin requests with wrong
            passwords (`E [...] [Client 41] pam_authenticate() returned 7 (Authentication failure)`), broken
            configs at a restart.
  clamd     ClamAV 1.4 clamd (Foreground, no LogFile: it logs to stdout; LogTime, LogClean, LogVerbose;
            a local signature database): `Sat Dec  5 20:52:47 2026 -> instream(127.0.0.1@49762): OK`,
            `... -> /path/uploads/batch-03/alice-cobalt-2.csv: OK`, `... -> SelfCheck: Database status OK.`,
            `... -> Database correctly reloaded (5 signatures)`.  Normal: a mail filter streaming attachments,
            an upload service and nightly directory scans, monitoring commands, signature updates + RELOAD,
            two clean restarts.  Broken: infected attachments and uploads (`... -> instream(...): 
            Onb.Test.Eicar.UNOFFICIAL(...) FOUND`), encrypted archives and files over MaxFileSize
            (Heuristics.*), unreadable uploads (`... -> Access denied: /path`), vanished paths, streams over
            StreamMaxLength, broken signature updates (`LibClamAV Error: ...`, `ERROR: ... -> reload_th:
            Database load failed: Malformed database`), broken configs at a restart.
  rabbitmq  RabbitMQ 3.10 (rabbitmq-server with its own epmd, log file at level info, the node's stdout
            appended): `2026-12-05 20:56:17.852955+00:00 [info] <0.6942.0> accepting AMQP connection
            <0.6942.0> (127.0.0.1:41802 -> 127.0.0.1:37369)`, `... connection <0.6942.0> (...): user 'web'
            authenticated and granted access to vhost '/'`, `... closing AMQP connection ...`.
            Normal: python AMQP clients of 5 services (3 vhosts) publishing and getting messages, named
            connections, a topic exchange; rabbitmqctl policies, queue listings, users added and deleted;
            two clean restarts.  Broken: wrong passwords, vhosts refused, channel errors (`... [error] ...
            operation queue.declare caused a channel exception precondition_failed: ...`), missed
            heartbeats, a vhost connection limit reached, memory / disk alarms, garbage on the port,
            broken configs at a restart.

Layout written under --out (default benchmarks/data/onboarding_tenth):

    manifest.json            one entry per source + generation date + command
    <source>/normal.log      lines of the normal phase, in the order written
    <source>/errors.log      lines caused by breaking the program
    <source>/errors.jsonl    {"line": ..., "kind": ..., "event": ...} for each errors.log line

How normal and error lines are separated (the same rule for every source):
the normal phase runs first and everything the program logs during it goes to
normal.log (truncated to --lines, hard cap 12,000).  Then each breakage kind runs
as its own phase, made of several occurrences; each occurrence runs in its own
time window (the breakage, then a pause for the program to log about it), and
only the lines logged inside these windows are considered.  A line is kept in
errors.log (with the phase name as its "kind" and the occurrence as its "event")
when

  * its level marks it as a problem (slurm error: / fatal: lines and lines of
    non-zero exits, signals, failures, invalid requests, DOWN / drained nodes,
    time limits, requeues, cancellations; celery WARNING / ERROR / CRITICAL lines,
    tracebacks and lines reporting errors, failures, lost connections; cups E / W
    lines and lines of stopped, crashed, stuck or aborted jobs; clamd WARNING: /
    ERROR: / LibClamAV Error lines and FOUND / ERROR answers; rabbitmq warning /
    error lines and lines of refusals, failures, alarms, blocked publishers and
    missed heartbeats), or
  * its template (the message with the timestamp, numbers, quoted strings, hex
    ids, UUIDs, IPs and ports masked; job / task / client ids, Erlang pids, domain
    names, user and word names and paths masked too) never occurred in the normal
    phase,

minus lines that merely echo the driving workload (celery received / succeeded
lines; clamd "OK" answers; rabbitmq connection accepted / authenticated / closed
lines).  A multi-line entry (a celery traceback, a rabbitmq message continued
under the same prefix) is kept or dropped whole, with its new continuation lines.
An occurrence of which no line is kept makes no event.

Usage:
    python benchmarks/onboarding_tenth_data.py --out benchmarks/data/onboarding_tenth \\
        [--sources slurm,celery,cups,clamd,rabbitmq] [--lines 6000] [--seed 10101] \\
        [--min-normal-seconds 60]
"""
from __future__ import annotations

import base64
import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from onboarding_data import FileLog, MissingProgram, free_port, need, say, version_of, wait_port, write_atomic
from onboarding_eighth_data import tcp_blocker
from onboarding_fifth_data import normal_loop, run
from onboarding_fourth_data import mask_names
from onboarding_heldout_data import (USERS, WORDS, Background, Breaker, Group, Source, as_user, children, entry_selector,
                                     raw_send)
from onboarding_sixth_data import TLS_HELLO, chown_tree, run_quiet

SOURCES = ["slurm", "celery", "cups", "clamd", "rabbitmq"]
NAMES = re.compile(r"\b(?:%s)\b" % "|".join(USERS + WORDS))
SYS_PY = "/usr/bin/python3"  # Debian's python, the one python3-celery and python3-amqp are installed for


def templater(head: re.Pattern, *subs: tuple[str, str]):
    """A template function: the time stamp (``head``) cut off, ``subs`` applied, then mask_names."""
    def template(line: str) -> str:
        body = head.sub("", line, count=1)
        for pat, rep in subs:
            body = re.sub(pat, rep, body)
        return mask_names(NAMES.sub("NAME", body))
    return template


def log_has(path: str, needle: bytes, since: int, timeout: float) -> bool:
    """Wait until ``needle`` shows in the log file after byte offset ``since`` (without consuming lines)."""
    end = time.time() + timeout
    while time.time() < end:
        with contextlib.suppress(OSError), open(path, "rb") as f:
            f.seek(since)
            if needle in f.read():
                return True
        time.sleep(0.2)
    return False


def size_of(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def pids_named(comm: str) -> list[int]:
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == comm:
                    out.append(int(pid))
    return out


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        for c in children(todo.pop()):
            out.append(c)
            todo.append(c)
    return out


def comm_of(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def kill_pids(pids, sig=signal.SIGKILL) -> None:
    for p in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p, sig)


# --------------------------------------------------------------------------
# slurm (slurmctld, with slurmd and munged on the same host)
# --------------------------------------------------------------------------

SLURM_CONF = """\
ClusterName=onb10
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/munge
AuthInfo=socket={munge_socket}
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={state}
SlurmdSpoolDir={work}/spool
SlurmctldPidFile={work}/slurmctld.pid
SlurmdPidFile={work}/slurmd.pid
SlurmctldLogFile={work}/slurmctld.log
SlurmdLogFile={work}/slurmd.log
SlurmctldDebug=debug2
SlurmdDebug=info
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
SchedulerParameters=kill_invalid_depend
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
EnforcePartLimits=ALL
ReturnToService=2
SlurmdTimeout=6
MinJobAge=60
KillWait=3
Prolog={work}/prolog.sh
SlurmdParameters=config_overrides
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=8000 State=UNKNOWN
PartitionName=batch Nodes=ALL Default=YES MaxTime=60 State=UP
PartitionName=short Nodes=ALL MaxTime=5 State=UP
PartitionName=long Nodes=ALL MaxTime=1440 State=UP
{extra}"""
SLURM_USERS = ["root", "www-data", "backup", "daemon", "list"]
SLURM_HEAD = re.compile(r"^\[[\d\-T:.]+\] ")
slurm_template = templater(SLURM_HEAD, (r"JobId=\d+(_(\d+|\*))?(\(\d+\))?", "JobId=N"), (r"StepId=\S+", "StepId=N"),
                           (r"\b(batch|short|long)\b", "PART"), (r"\bUID=\d+", "UID=N"),
                           (r"\[[\d.]+:\d+\]", "[ADDR]"), (r"`[^`]*`", "`PATH`"), (r"/[\w./-]+", "PATH"))


def slurm_problem(line: str) -> bool:
    return bool(re.search(r"\berror:|\bfatal:|WEXITSTATUS [1-9]|WTERMSIG|[Ff]ail|[Ii]nvalid|not available|"
                          r"not responding|DOWN|[Dd]rain|[Tt]ime limit|[Kk]illing|[Rr]equeue|[Cc]ancel|"
                          r"[Rr]efused|[Dd]enied|[Uu]nable|can't be satisfied", line))


def slurm_echo(line: str) -> bool:
    return False


def source_slurm(args) -> Source:
    slurmctld = need("/usr/sbin/slurmctld", "slurmctld")
    slurmd = need("/usr/sbin/slurmd", "slurmd")
    munged = need("/usr/sbin/munged", "munge")
    sbatch, squeue, scontrol = need("sbatch", "slurm-client"), need("squeue", "slurm-client"), need("scontrol", "slurm-client")
    scancel, sinfo, srun = need("scancel", "slurm-client"), need("sinfo", "slurm-client"), need("srun", "slurm-client")
    rng = random.Random(f"{args.seed}-slurm")
    host = socket.gethostname()
    with tempfile.TemporaryDirectory(prefix="onb10-slurm-") as work, Group() as sv:
        os.chmod(work, 0o755)
        for d in ("state", "spool", "out", "scratch", "munge", "munge/etc", "munge/run", "munge/lib",
                  "rogue", "rogue/etc", "rogue/run", "rogue/lib"):
            os.makedirs(os.path.join(work, d))
        os.chmod(os.path.join(work, "out"), 0o1777)
        for m in ("munge", "rogue"):  # the cluster's munge key, and a key of another cluster (a misconfigured login node)
            with open(os.path.join(work, m, "etc", "munge.key"), "wb") as f:
                f.write(rng.randbytes(128))
            os.chmod(os.path.join(work, m, "etc", "munge.key"), 0o600)
            for d, mode in (("", 0o755), ("etc", 0o700), ("run", 0o755), ("lib", 0o700)):
                os.chmod(os.path.join(work, m, d), mode)
            chown_tree(os.path.join(work, m), "munge")
        write_atomic(os.path.join(work, "prolog.sh"), f"#!/bin/sh\n# the node's scratch file system must be mounted\nexec test -d {work}/scratch\n")
        os.chmod(os.path.join(work, "prolog.sh"), 0o755)
        ctld_port, slurmd_port = free_port(), free_port()
        conf, logp = os.path.join(work, "slurm.conf"), os.path.join(work, "slurmctld.log")
        rogue_conf = os.path.join(work, "rogue.conf")

        def write_conf(path: str = conf, munge: str = "munge", extra: str = "", state: str | None = None,
                       port: int | None = None, cpus: str = "8") -> None:
            write_atomic(path, SLURM_CONF.format(host=host, ctld_port=port or ctld_port, slurmd_port=slurmd_port,
                                                 munge_socket=f"{work}/{munge}/run/munge.socket", work=work,
                                                 state=state or f"{work}/state", extra=extra, cpus=cpus))

        write_conf()
        write_conf(rogue_conf, munge="rogue")
        env = dict(os.environ, SLURM_CONF=conf)

        def start_munge(m: str) -> None:
            sv.start(f"munged-{m}", as_user("munge", [munged, "-F", f"--socket={work}/{m}/run/munge.socket",
                                                      f"--key-file={work}/{m}/etc/munge.key", f"--log-file={work}/{m}/lib/munged.log",
                                                      f"--pid-file={work}/{m}/run/munged.pid", f"--seed-file={work}/{m}/lib/seed"]),
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(50):
                if os.path.exists(f"{work}/{m}/run/munge.socket"):
                    return
                time.sleep(0.1)

        def start_ctld(wait: bool = True) -> None:
            with open(os.path.join(work, "slurmctld.stderr"), "ab") as err:  # -D also copies the log to stderr
                sv.start("slurmctld", [slurmctld, "-D", "-f", conf], stdout=err, stderr=err, cwd=work, env=env)
            if wait:
                wait_port(ctld_port)
                time.sleep(1.0)

        def start_slurmd() -> None:
            sv.start("slurmd", [slurmd, "-D", "-f", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work, env=env)
            wait_port(slurmd_port)

        def stop_ctld() -> None:
            sv.stop("slurmctld", signal.SIGTERM, 20)

        def cli(argv: list[str], user: str = "root", e: dict | None = None, timeout: float = 15) -> str:
            if user != "root":
                argv = as_user(user, argv)
            try:
                p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=e or env, cwd=f"{work}/out")
                return p.stdout + p.stderr
            except subprocess.TimeoutExpired:
                return ""

        def submit(wrap: str, user: str = "root", opts: list[str] | None = None, name: str | None = None,
                   e: dict | None = None) -> int:
            out = cli([sbatch, "-J", name or rng.choice(WORDS), "-o", f"{work}/out/%x-%j.out", "-D", f"{work}/out",
                       *(opts or []), "--wrap", wrap], user, e)
            m = re.search(r"Submitted batch job (\d+)", out)
            return int(m.group(1)) if m else 0

        def state_of(job: int) -> str:
            return cli([squeue, "-h", "-j", str(job), "-o", "%T"]).strip()

        def wait_running(job: int, timeout: float = 20) -> bool:
            end = time.time() + timeout
            while time.time() < end:
                if state_of(job) == "RUNNING":
                    return True
                time.sleep(0.3)
            return False

        def wait_done(job: int, timeout: float = 15) -> None:
            end = time.time() + timeout
            while time.time() < end and job and state_of(job) in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING"):
                time.sleep(0.3)

        def job_pids(job: int) -> list[int]:
            out = cli([scontrol, "listpids", str(job)])
            return [int(x.split()[0]) for x in out.splitlines()[1:] if x.split() and x.split()[0].isdigit()]

        def workload(r: random.Random, user: str | None = None) -> None:
            user = user or r.choice(SLURM_USERS)
            x = r.random()
            part = r.choice(["batch", "batch", "short", "long"])
            opts = ["-p", part, "-t", str(r.choice([1, 2, 5]) if part == "short" else r.choice([5, 10, 30, 60]))]
            if x < 0.35:
                submit(f"echo start; sleep {r.uniform(0.1, 1.5):.1f}; echo done", user, opts)
            elif x < 0.55:  # a job of several steps
                n = r.randint(2, 4)
                submit("; ".join(f"srun -n1 sleep {r.uniform(0.05, 0.4):.2f}" for _ in range(n)), user,
                       opts + ["-n", "1"], name=f"etl-{r.choice(WORDS)}")
            elif x < 0.65:  # an array
                submit(f"sleep {r.uniform(0.1, 0.8):.1f}", user, opts + [f"--array=1-{r.randint(2, 6)}"], name=f"sweep-{r.choice(WORDS)}")
            elif x < 0.75:  # a pipeline: the second job waits for the first
                a = submit(f"sleep {r.uniform(0.2, 1.0):.1f}", user, opts, name="prep")
                if a:
                    submit("sleep 0.2", user, opts + [f"--dependency=afterok:{a}"], name="train")
            elif x < 0.82:  # an interactive step
                cli([srun, "-p", part, "-n", str(r.randint(1, 2)), "-J", f"shell-{r.choice(WORDS)}", "true"], user)
            elif x < 0.88:  # a held job, released or cancelled later
                j = submit("sleep 0.3", user, opts + ["-H"], name=f"hold-{r.choice(WORDS)}")
                if j:
                    time.sleep(r.uniform(0.2, 1.0))
                    if r.random() < 0.6:
                        cli([scontrol, "release", str(j)])
                    else:
                        cli([scancel, str(j)], user)
            elif x < 0.93:  # queries of users and monitoring
                cli(r.choice([[squeue], [sinfo], [squeue, "-u", user], [scontrol, "show", "partition"],
                              [scontrol, "show", "node"], [sinfo, "-R"], [scontrol, "ping"]]), user)
            else:  # a job cancelled while it runs (the user changed their mind)
                j = submit("sleep 20", user, opts, name=f"scratch-{r.choice(WORDS)}")
                if j:
                    wait_running(j, 5)
                    cli([scancel, str(j)], user)

        start_munge("munge")
        start_ctld()
        start_slurmd()
        log = FileLog(logp)
        say(f"slurmctld on 127.0.0.1:{ctld_port}, slurmd on {slurmd_port}; normal phase...")
        state = {"restarts": 0, "reconf": 0}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=workload, args=(random.Random(rng.random()),)) for _ in range(rng.randint(1, 3))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(40)
            if state["reconf"] < 2 and elapsed > 20 + 40 * state["reconf"]:
                cli([scontrol, "reconfigure"])
                state["reconf"] += 1
            if state["restarts"] < 2 and elapsed > 15 + 25 * state["restarts"]:
                stop_ctld()
                time.sleep(0.3)
                start_ctld()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.05, 0.3))

        try:
            # two long jobs, shortened by an admin later (time_limit)
            normal = normal_loop(args, log, "slurm", round_fn)
            templates = {slurm_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, slurm_template, slurm_problem, slurm_echo))
            long_jobs = [submit("sleep 600", "backup", ["-p", "long", "-t", "120"], name=f"backup-{w}") for w in ("nightly", "weekly")]

            def restart_ctld() -> None:
                sv.stop("slurmctld", signal.SIGTERM, 10)
                sv.forget("slurmctld")
                write_conf()
                start_ctld()

            with Background(workload, random.Random(rng.random()), (0.5, 1.5)):
                with br.phase("job_failed"):  # a step of a job fails, the job stops there
                    for wrap in ["srun -n1 true; srun -n1 sh -c 'exit 3'", "echo loading; sh -c 'exit 2'; echo never",
                                 "srun -n1 true; kill -SEGV $$", "python3 -c 'import sys; sys.exit(\"schema mismatch\")'"]:
                        with br.occurrence(1.5):
                            wait_done(submit("set -e; " + wrap, rng.choice(SLURM_USERS), ["-p", "batch", "-t", "10"],
                                             name=f"etl-{rng.choice(WORDS)}"))
                with br.phase("job_killed"):  # a running job's processes killed (the OOM killer, an admin)
                    for sig in [signal.SIGKILL, signal.SIGKILL, signal.SIGTERM]:
                        j = submit("srun -n1 sleep 60", rng.choice(SLURM_USERS), ["-p", "batch", "-t", "10"], name=f"train-{rng.choice(WORDS)}")
                        wait_running(j)
                        time.sleep(1.5)
                        br.between()
                        with br.occurrence(3.0):
                            kill_pids([p for p in job_pids(j) if comm_of(p) == "sleep"], sig)
                with br.phase("dependency_never_satisfied"):  # a pipeline whose first job fails: the next never runs
                    for _ in range(3):
                        with br.occurrence(3.0):
                            a = submit("sleep 0.5; exit 1", "www-data", ["-p", "batch", "-t", "5"], name="prep")
                            if a:
                                submit("sleep 1", "www-data", ["-p", "batch", "-t", "5", f"--dependency=afterok:{a}"], name="train")
                with br.phase("rejected_submission"):  # submissions no partition / node can take
                    for opts in [["-p", "gpu"], ["--mem=999999"], ["-p", "short", "-t", "30"], ["-N", "4"],
                                 ["--gres=gpu:1"], ["-c", "64"]]:
                        with br.occurrence(1.5):
                            submit("sleep 1", rng.choice(SLURM_USERS), opts)
                with br.phase("prolog_failure"):  # the node's scratch file system gone: the prolog fails, the node drains
                    for _ in range(2):
                        os.rmdir(os.path.join(work, "scratch"))
                        with br.occurrence(4.0):
                            j = submit("sleep 1", rng.choice(SLURM_USERS), ["-p", "batch", "-t", "5"])
                        os.makedirs(os.path.join(work, "scratch"))
                        cli([scontrol, "update", f"nodename={host}", "state=resume"])
                        if j:
                            cli([scancel, str(j)])
                        time.sleep(2)
                        br.between()
                with br.phase("auth_failure"):  # a login node with another cluster's munge key
                    start_munge("rogue")
                    renv = dict(os.environ, SLURM_CONF=rogue_conf)
                    for argv in [None, [squeue], [scontrol, "show", "job"], None]:
                        with br.occurrence(1.5):
                            if argv is None:
                                submit("sleep 1", rng.choice(SLURM_USERS), e=renv)
                            else:
                                cli(argv, e=renv)
                    sv.stop("munged-rogue")
                with br.phase("garbage_rpc"):  # garbage on slurmctld's port
                    for data in [b"GET / HTTP/1.1\r\nHost: slurm\r\n\r\n", TLS_HELLO, b"\x00\x00\x00\x10" + bytes(16),
                                 b"\xff\xff\xff\xff" + b"junk" * 8]:
                        with br.occurrence(1.5):
                            raw_send(ctld_port, data, wait=0.5)
                with br.phase("time_limit"):  # running jobs over their (shortened) time limit
                    for j in long_jobs:
                        if not j:
                            continue
                        with br.occurrence(2.0):
                            since = size_of(logp)
                            cli([scontrol, "update", f"JobId={j}", "TimeLimit=1"])
                            log_has(logp, b"Time limit exhausted for JobId=%d" % j, since, 40)
                with br.phase("node_failure"):  # the compute node dies with jobs on it (slurmd and its steps killed)
                    for _ in range(2):
                        j = submit("srun -n1 sleep 120", rng.choice(SLURM_USERS), ["-p", "batch", "-t", "10"], name=f"sim-{rng.choice(WORDS)}")
                        wait_running(j)
                        time.sleep(1)
                        br.between()
                        with br.occurrence(3.0):
                            since = size_of(logp)
                            sv.stop("slurmd", signal.SIGKILL, 5)
                            kill_pids(pids_named("slurmstepd") + [p for p in job_pids(j)])
                            log_has(logp, b"setting DOWN", since, 45)
                        start_slurmd()
                        time.sleep(3)
                        cli([scancel, str(j)])
                        time.sleep(1)
                        br.between()
                with br.phase("bad_config_restart"):  # slurm.conf edits with mistakes, slurmctld restarted
                    for kw in [{"state": "/nonexistent/slurm/state"}, {"extra": "PartitionName=gpu Nodes=gpu[01-04] MaxTime=60\n"},
                               {"extra": "SelectType=select/cons_tres_v2\n"}, {"extra": "SchedulerType=sched/fifo2\n"},
                               {"cpus": "0"}]:
                        stop_ctld()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(2.0):
                            start_ctld(wait=False)
                            time.sleep(3)
                            cli([squeue], timeout=3)
                        restart_ctld()
                        br.between()
        finally:
            stop_ctld()
            sv.stop("slurmd", signal.SIGTERM, 10)
            kill_pids(pids_named("slurmstepd"))
    return Source("slurm", "Slurm (slurmctld)", version_of([slurmctld, "-V"]),
                  "slurmctld log file at SlurmctldDebug=debug2 (`[2026-12-05T20:38:29.990] _slurm_rpc_submit_batch_job: JobId=54 "
                  "InitPrio=4294901759 usec=334`, `... sched: Allocate JobId=54 NodeList=vm #CPUs=1 Partition=batch`, `... "
                  "_job_complete: JobId=54 WEXITSTATUS 0`, `... debug2: Processing RPC: REQUEST_JOB_INFO from UID=0`, `... error: "
                  "Nodes vm not responding, setting DOWN`): every job traced from submission through allocation, its steps and "
                  "completion",
                  "slurmctld -D + slurmd -D on one host (munged with a private key; 1 node of 8 CPUs; partitions batch, short, "
                  "long; backfill, kill_invalid_depend, a prolog checking the scratch file system) with sbatch / srun / scancel "
                  "/ scontrol / squeue / sinfo clients of 5 users: one-step jobs, jobs of 2-4 srun steps, arrays, pipelines "
                  "of a job and a dependent job, interactive steps, held jobs released or cancelled, jobs cancelled while "
                  "running, queries; 2 scontrol reconfigure, 2 clean slurmctld restarts",
                  "job_failed (4 jobs whose step fails: exit codes, SIGSEGV, a python error), job_killed (3 running jobs' "
                  "processes killed with SIGKILL / SIGTERM), dependency_never_satisfied (3 pipelines whose first job fails: the "
                  "dependent job never runs), rejected_submission (6: unknown partition, too much memory, a time limit over the "
                  "partition's, too many nodes, an unknown GRES, too many CPUs), prolog_failure (2 jobs launched while the "
                  "scratch file system is gone: node drained, job requeued held), auth_failure (4 RPCs signed with another "
                  "cluster's munge key), garbage_rpc (4 garbage / TLS / bad headers on slurmctld's port), time_limit (2 running "
                  "jobs over their (shortened) time limit), node_failure (2: slurmd and its steps SIGKILLed with a job running: "
                  "node not responding, DOWN, job requeued), bad_config_restart (5: a missing StateSaveLocation, a partition "
                  "of undefined nodes, an unknown select plugin, an unknown scheduler, CPUs=0)", normal, br.errors)


# --------------------------------------------------------------------------
# celery (a worker with embedded beat; redis as the broker)
# --------------------------------------------------------------------------

CELERY_APP = r"""
import os, random, time
from celery import Celery
from celery.exceptions import SoftTimeLimitExceeded
from celery.utils.log import get_task_logger

BROKER = os.environ.get("SHOP_BROKER", "redis://127.0.0.1:6379/0")
app = Celery("shop", broker=BROKER, backend=BROKER[:-1] + "1")
app.conf.update(task_soft_time_limit=3, task_time_limit=6, worker_max_tasks_per_child=80, timezone="UTC",
                broker_connection_retry_on_startup=True, result_expires=600,
                beat_schedule={"cleanup-sessions": {"task": "shop_tasks.cleanup_sessions", "schedule": 9.0},
                               "sync-inventory": {"task": "shop_tasks.sync_inventory", "schedule": 13.0,
                                                  "args": ("berlin",)}})
log = get_task_logger(__name__)


class GatewayError(Exception):
    pass


@app.task(bind=True, max_retries=3, default_retry_delay=0.4)
def charge_card(self, order, amount, user, flaky=0.0):
    log.info("order %s: charging %.2f EUR to the card of %s (attempt %d)", order, amount, user, self.request.retries + 1)
    time.sleep(random.uniform(0.01, 0.08))
    if random.random() < flaky:
        raise self.retry(exc=GatewayError("payment gateway answered 503 Service Unavailable"))
    return {"order": order, "charged": amount, "auth": "%06d" % random.randint(0, 999999)}


@app.task
def reserve_stock(order, items, warehouse):
    log.info("order %s: reserving %d items in %s", order, items, warehouse)
    time.sleep(random.uniform(0.01, 0.05))
    return items


@app.task
def generate_invoice(charge, user):
    log.info("order %s: invoice INV-%s rendered for %s", charge["order"], charge["auth"], user)
    return "INV-" + charge["auth"]


@app.task
def send_email(to, template):
    time.sleep(random.uniform(0.01, 0.04))
    log.info("mail %s sent to %s@example.test", template, to)


@app.task
def resize_image(name, sizes):
    for s in sizes:
        log.info("image %s: thumbnail %dx%d written", name, s, s)
        time.sleep(0.01)
    return len(sizes)


@app.task
def export_report(report, rows, fail_at=0, error="", hang=0.0, stubborn=False, pidfile=""):
    if pidfile:
        with open(pidfile, "w") as f:
            f.write(str(os.getpid()))
    steps = ["query", "render", "upload"]
    for i, step in enumerate(steps, 1):
        if i == fail_at:
            if error == "key":
                raise KeyError("customer_id")
            if error == "value":
                raise ValueError("could not convert string to float: 'N/A'")
            if error == "conn":
                raise ConnectionRefusedError(111, "Connection refused")
            if error == "zero":
                rows = rows / 0
            if error == "perm":
                open("/proc/sys/kernel/hostname", "w").write(report)
        if i == 2 and hang:
            try:
                time.sleep(hang)
            except SoftTimeLimitExceeded:
                if not stubborn:
                    log.warning("report %s: render interrupted, cleaning up", report)
                    raise
                time.sleep(hang)  # the renderer is stuck in C code and does not notice
        log.info("report %s: step %d/3 %s done (%d rows)", report, i, step, rows)
        time.sleep(random.uniform(0.01, 0.1))
    return report


@app.task
def cleanup_sessions():
    log.info("removed %d expired sessions", random.randint(0, 40))


@app.task
def sync_inventory(warehouse):
    log.info("inventory of %s synced: %d changes", warehouse, random.randint(0, 25))
"""
CELERY_PRODUCER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from celery import chain, group
import shop_tasks as t

for line in sys.stdin:
    c = json.loads(line)
    try:
        if c["kind"] == "task":
            t.app.send_task(c["name"], args=c.get("args", []), kwargs=c.get("kwargs", {}), **c.get("opts", {}))
        elif c["kind"] == "order":
            o, u = c["order"], c["user"]
            chain(t.reserve_stock.si(o, c["items"], c["warehouse"]), t.charge_card.si(o, c["amount"], u, c.get("flaky", 0)),
                  t.generate_invoice.s(u), t.send_email.si(u, "order-confirmation")).apply_async()
        elif c["kind"] == "thumbs":
            group(t.resize_image.s(n, c["sizes"]) for n in c["images"]).apply_async()
        elif c["kind"] == "raw":  # a message pushed to the queue by hand
            t.app.connection().default_channel.client.lpush("celery", c["data"])
    except Exception as e:
        print("error", repr(e), flush=True)
        continue
    print("ok", flush=True)
"""
CELERY_HEAD = re.compile(r"^\[\d{4}-\d\d-\d\d [\d:,]+: ")
celery_template = templater(CELERY_HEAD, (r"\[[0-9a-f-]{36}\]", "[ID]"), (r"ForkPoolWorker-\d+", "ForkPoolWorker-N"),
                            (r"'[^']*'", "'_'"), (r"/[\w./-]+", "PATH"))


def celery_problem(line: str) -> bool:
    return bool(re.search(r"^\[[^\]]*: (WARNING|ERROR|CRITICAL)/", line)) or bool(
        re.search(r"Traceback|Error|[Ee]xception|[Ff]ailed|[Rr]efused|[Ll]ost|[Uu]nrecoverable|[Ii]nvalid", line))


def celery_echo(line: str) -> bool:
    return bool(re.search(r"\] (received|succeeded in [\d.e-]+s: .*)$", line))


def source_celery(args) -> Source:
    if not os.path.exists(SYS_PY) or run_quiet([SYS_PY, "-c", "import celery, redis"], 30) != 0:
        raise MissingProgram("celery for /usr/bin/python3 not found -- install it with: apt-get install python3-celery python3-redis")
    redis_server = need("/usr/bin/redis-server", "redis-server")
    rng = random.Random(f"{args.seed}-celery")
    host = socket.gethostname()
    with tempfile.TemporaryDirectory(prefix="onb10-celery-") as work, Group() as sv:
        os.chmod(work, 0o755)
        os.makedirs(os.path.join(work, "app"))
        os.makedirs(os.path.join(work, "busy"))
        write_atomic(os.path.join(work, "app", "shop_tasks.py"), CELERY_APP)
        write_atomic(os.path.join(work, "producer.py"), CELERY_PRODUCER)
        chown_tree(work, "www-data")
        rport = free_port()
        logp = os.path.join(work, "worker.log")
        broker = f"redis://127.0.0.1:{rport}/0"

        def start_redis() -> None:
            sv.start("redis", [redis_server, "--port", str(rport), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                               "--logfile", os.path.join(work, "redis.log")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_port(rport)

        def start(wait: bool = True, app: str = "shop_tasks", extra: list[str] | None = None, b: str | None = None) -> None:
            env = dict(os.environ, SHOP_BROKER=b or broker, PYTHONPATH=os.path.join(work, "app"), HOME=work)
            with open(logp, "ab") as logf:  # the start-up banner and errors before the log is set up go to the same file
                sv.start("worker", as_user("www-data", [SYS_PY, "-m", "celery", "-A", app, "worker", "-B", "-l", "INFO", "-c", "2",
                                                      "-n", f"shop@{host}", "--logfile", logp, "-s", os.path.join(work, "beat-schedule"),
                                                      "--pidfile", os.path.join(work, "worker.pid"), *(extra or [])]),
                         stdout=logf, stderr=logf, cwd=work, env=env)
            if wait:
                wait_ready()

        def wait_ready() -> None:
            end = time.time() + 30
            while time.time() < end:
                with contextlib.suppress(OSError), open(logp, "rb") as f:
                    f.seek(max(0, size_of(logp) - 3000))
                    tail = f.read()
                    if tail.rfind(b" ready.") > max(tail.rfind(b"Warm shutdown"), tail.rfind(b"celery@"), tail.rfind(b"-- ******* ----")):
                        return
                time.sleep(0.2)

        def stop() -> None:
            sv.stop("worker", signal.SIGTERM, 20)

        start_redis()
        with open(logp, "ab"):
            pass
        shutil.chown(logp, "www-data", "www-data")
        prod = subprocess.Popen([SYS_PY, os.path.join(work, "producer.py"), os.path.join(work, "app")], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1,
                                env=dict(os.environ, SHOP_BROKER=broker), start_new_session=True)
        lock = threading.Lock()

        def send(cmd: dict) -> None:
            with lock:
                with contextlib.suppress(OSError, ValueError):
                    prod.stdin.write(json.dumps(cmd) + "\n")
                    prod.stdin.flush()
                    prod.stdout.readline()

        state = {"order": 41000, "report": 900}

        def shop(r: random.Random) -> None:
            x = r.random()
            state["order"] += 1
            if x < 0.35:
                send({"kind": "order", "order": state["order"], "user": r.choice(USERS), "items": r.randint(1, 6),
                      "warehouse": r.choice(["berlin", "lyon", "porto"]), "amount": round(r.uniform(5, 400), 2),
                      "flaky": 0.1})
            elif x < 0.5:
                send({"kind": "thumbs", "images": [f"{r.choice(WORDS)}-{r.randint(1, 999)}.jpg" for _ in range(r.randint(1, 4))],
                      "sizes": r.sample([64, 128, 256, 512], r.randint(1, 3))})
            elif x < 0.7:
                send({"kind": "task", "name": "shop_tasks.send_email",
                      "args": [r.choice(USERS), r.choice(["welcome", "password-reset", "newsletter", "shipping-update"])]})
            elif x < 0.8:
                state["report"] += 1
                send({"kind": "task", "name": "shop_tasks.export_report",
                      "args": [f"{r.choice(['sales', 'stock', 'returns'])}-{state['report']}", r.randint(10, 5000)]})
            elif x < 0.9:
                send({"kind": "task", "name": "shop_tasks.sync_inventory", "args": [r.choice(["lyon", "porto", "berlin"])]})
            else:  # a reminder sent later
                send({"kind": "task", "name": "shop_tasks.send_email", "args": [r.choice(USERS), "cart-reminder"],
                      "opts": {"countdown": r.uniform(1, 4)}})

        start()
        log = FileLog(logp)
        say(f"celery worker on redis 127.0.0.1:{rport}; normal phase...")
        rs = {"restarts": 0}

        def round_fn(n: int, elapsed: float) -> None:
            for _ in range(rng.randint(2, 6)):
                shop(rng)
            if rs["restarts"] < 2 and elapsed > 15 + 25 * rs["restarts"]:
                stop()
                time.sleep(0.3)
                start()
                rs["restarts"] += 1
            time.sleep(rng.uniform(0.05, 0.25))

        try:
            normal = normal_loop(args, log, "celery", round_fn)
            templates = {celery_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, celery_template, celery_problem, celery_echo,
                                             head=lambda line: bool(CELERY_HEAD.match(line))))

            def restart_clean() -> None:
                sv.stop("worker", signal.SIGTERM, 10)
                sv.forget("worker")
                start()

            def report(**kw) -> str:
                state["report"] += 1
                name = f"{rng.choice(['sales', 'stock', 'returns', 'audit'])}-{state['report']}"
                send({"kind": "task", "name": "shop_tasks.export_report", "args": [name, rng.randint(10, 5000)],
                      "kwargs": {k: v for k, v in kw.items() if k != "opts"}, "opts": kw.get("opts", {})})
                return name

            with Background(shop, random.Random(rng.random()), (0.3, 1.0)):
                with br.phase("task_failed"):  # a step of a report export raising
                    for step, err in [(1, "key"), (2, "value"), (3, "conn"), (2, "zero"), (3, "perm")]:
                        with br.occurrence(2.0):
                            report(fail_at=step, error=err)
                with br.phase("retries_exhausted"):  # the payment gateway down for an order: 3 retries, then the chain stops
                    for _ in range(3):
                        state["order"] += 1
                        with br.occurrence(3.0):
                            send({"kind": "order", "order": state["order"], "user": rng.choice(USERS), "items": 2,
                                  "warehouse": "lyon", "amount": round(rng.uniform(5, 400), 2), "flaky": 1.0})
                with br.phase("time_limit"):  # exports hanging in their render step: soft, then hard time limits
                    for kw in [{"hang": 8}, {"hang": 20, "stubborn": True}, {"hang": 5}, {"hang": 20, "stubborn": True}]:
                        with br.occurrence(2.0):
                            since = size_of(logp)
                            report(**kw)
                            log_has(logp, b"exited with" if kw.get("stubborn") else b"SoftTimeLimitExceeded", since, 10)
                with br.phase("worker_lost"):  # the pool process running an export killed (OOM killer, a crash)
                    for sig in [signal.SIGKILL, signal.SIGSEGV, signal.SIGKILL]:
                        pidfile = os.path.join(work, "busy", f"r{rng.randint(1000, 9999)}.pid")
                        with br.occurrence(2.0):
                            since = size_of(logp)
                            report(hang=6, pidfile=pidfile, opts={"soft_time_limit": 30, "time_limit": 40})
                            for _ in range(100):
                                if size_of(pidfile):
                                    break
                                time.sleep(0.1)
                            time.sleep(0.3)
                            with contextlib.suppress(OSError, ValueError):
                                kill_pids([int(open(pidfile).read())], sig)
                            log_has(logp, b"WorkerLostError", since, 8)
                with br.phase("unregistered_task"):  # producers deployed with tasks this worker does not know
                    for name in ["shop_tasks.refund_order", "shop_tasks.export_report_v2", "billing.tasks.charge"]:
                        with br.occurrence(1.5):
                            send({"kind": "task", "name": name, "args": [rng.randint(1, 99999)]})
                with br.phase("malformed_message"):  # messages in the queue that are not celery tasks
                    for data in [json.dumps({"body": base64.b64encode(b"{not json").decode(), "content-encoding": "utf-8",
                                             "content-type": "application/json", "headers": {"task": "shop_tasks.send_email",
                                             "id": "0b4c2b0e-bad0-4a53-9f1e-3d2f8e0f0001"}, "properties": {
                                                 "delivery_tag": "b5c1", "body_encoding": "base64", "delivery_info":
                                                 {"exchange": "", "routing_key": "celery"}, "priority": 0}}),
                                 json.dumps({"body": base64.b64encode(b"hello").decode(), "content-encoding": "binary",
                                             "content-type": "application/x-python-serialize", "headers": {},
                                             "properties": {"delivery_tag": "b5c2", "body_encoding": "base64",
                                                            "delivery_info": {"exchange": "", "routing_key": "celery"}}}),
                                 json.dumps({"body": base64.b64encode(b'{"order": 7}').decode(), "content-encoding": "utf-8",
                                             "content-type": "application/json", "headers": {},
                                             "properties": {"delivery_tag": "b5c3", "body_encoding": "base64",
                                                            "delivery_info": {"exchange": "", "routing_key": "celery"}}})]:
                        with br.occurrence(2.0):
                            send({"kind": "raw", "data": data})
                with br.phase("broker_down"):  # redis gone for a few seconds
                    for down in [4, 6]:
                        with br.occurrence(2.0):
                            sv.stop("redis", signal.SIGKILL, 5)
                            time.sleep(down)
                        start_redis()
                        time.sleep(4)
                        br.between()
                with br.phase("bad_config_restart"):  # the worker restarted with a broken deploy / broken options
                    broken = os.path.join(work, "app", "shop_tasks_v2.py")
                    write_atomic(broken, CELERY_APP.replace("def cleanup_sessions():", "def cleanup_sessions()"))
                    missing = os.path.join(work, "app", "shop_tasks_v3.py")
                    write_atomic(missing, CELERY_APP.replace("import os, random, time", "import os, random, time, stripe"))
                    chown_tree(work, "www-data")
                    blocker = tcp_blocker()
                    for kw in [{"app": "shop_tasks_v2"}, {"app": "shop_tasks_v3"}, {"app": "shop_task"},
                               {"extra": ["--concurrency", "many"]},
                               {"b": f"redis://127.0.0.1:{blocker.getsockname()[1]}/0"}]:
                        stop()
                        br.between()
                        with br.occurrence(2.0):
                            start(wait=False, **kw)
                            time.sleep(4)
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            stop()
            with contextlib.suppress(OSError):
                prod.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                prod.wait(5)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(prod.pid, signal.SIGKILL)
    return Source("celery", "Celery worker (celery -A shop_tasks worker -B)", version_of([SYS_PY, "-m", "celery", "--version"]),
                  "celery worker --logfile at INFO with its stdout/stderr (`[2026-12-05 20:44:12,459: INFO/MainProcess] Task "
                  "shop_tasks.send_email[7005e6d4-...] received`, `[...: INFO/ForkPoolWorker-2] shop_tasks.reserve_stock[...]: "
                  "order 41005: reserving 6 items in berlin`, `[...: INFO/ForkPoolWorker-2] Task shop_tasks.send_email[...] "
                  "succeeded in 0.03s: None`, `[...: INFO/Beat] Scheduler: Sending due task cleanup-sessions ...`, ERROR lines "
                  "with python tracebacks, the start-up banner): every task traced from received through its own step lines "
                  "to succeeded / retry / raised",
                  "celery -A shop_tasks worker -B (prefork, 2 processes, as www-data, redis broker and result backend, soft / "
                  "hard time limits 3s / 6s, max 80 tasks per child, embedded beat with 2 periodic tasks) with a python "
                  "producer: order chains (reserve stock, charge the card with retries on a flaky gateway, invoice, mail), "
                  "groups of thumbnail jobs, mails, delayed reminders, 3-step report exports, inventory syncs; 2 warm restarts",
                  "task_failed (5 exports raising in one of their steps: KeyError, ValueError, ConnectionRefusedError, "
                  "ZeroDivisionError, PermissionError), retries_exhausted (3 orders whose gateway always fails: 3 retries, "
                  "the chain stops), time_limit (4 exports hanging in their render step: soft time limit, or hard time limit "
                  "killing the pool process), worker_lost (3 pool processes killed with SIGKILL / SIGSEGV mid-task), "
                  "unregistered_task (3 tasks the worker does not know), malformed_message (3: a body that is not JSON, a "
                  "pickle body, a message without task headers), broker_down (2 redis outages of 4-6s), bad_config_restart (5: "
                  "an app with a syntax error, an app importing a missing module, a mistyped app name, a non-numeric "
                  "concurrency, a broker port that accepts and never answers)", normal, br.errors)


# --------------------------------------------------------------------------
# cups (cupsd with socket printers)
# --------------------------------------------------------------------------

CUPSD_CONF = """\
LogLevel info
MaxLogSize 0
PageLogFormat
Listen 127.0.0.1:{port}
Listen {work}/cups.sock
Browsing Off
WebInterface No
DefaultAuthType Basic
MaxJobs 5000
PreserveJobFiles No
JobRetryInterval 5
{extra}<Location />
  Order allow,deny
  Allow from 127.0.0.0/8
</Location>
<Location /admin>
  Order allow,deny
  Allow from 127.0.0.0/8
</Location>
<Policy default>
  JobPrivateAccess default
  JobPrivateValues default
  SubscriptionPrivateAccess default
  SubscriptionPrivateValues default
  <Limit Create-Job Print-Job Print-URI Validate-Job>
    Order deny,allow
  </Limit>
  <Limit Send-Document Send-URI Hold-Job Release-Job Restart-Job Purge-Jobs Set-Job-Attributes Cancel-Job Cancel-My-Jobs Close-Job CUPS-Move-Job CUPS-Get-Document>
    Require user @OWNER @SYSTEM
    Order deny,allow
  </Limit>
  <Limit CUPS-Add-Modify-Printer CUPS-Delete-Printer CUPS-Add-Modify-Class CUPS-Delete-Class CUPS-Set-Default>
    AuthType Default
    Require user @SYSTEM
    Order deny,allow
  </Limit>
  <Limit Pause-Printer Resume-Printer Enable-Printer Disable-Printer Hold-New-Jobs Release-Held-New-Jobs Cancel-Jobs CUPS-Accept-Jobs CUPS-Reject-Jobs>
    AuthType Default
    Require user @SYSTEM
    Order deny,allow
  </Limit>
  <Limit All>
    Order deny,allow
  </Limit>
</Policy>
"""
CUPS_FILES = """\
SystemGroup root lpadmin
User lp
Group lp
ServerRoot {work}
RequestRoot {work}/spool
TempDir {work}/spool/tmp
CacheDir {work}/cache
StateDir {work}/state
ErrorLog {work}/log/error_log
AccessLog {work}/log/access_log
PageLog {work}/log/page_log
Printcap {work}/printcap
FileDevice No
{extra}"""
CUPS_HEAD = re.compile(r"^[A-Z] \[[^\]]+\] ")
cups_template = templater(CUPS_HEAD, (r"\[Job \d+\]", "[Job N]"), (r"\[Client \d+\]", "[Client N]"), (r"\(PID \d+\)", "(PID N)"),
                          (r'"[^"]*"', '"_"'), (r"/[\w./-]+", "PATH"))


def cups_problem(line: str) -> bool:
    return bool(re.match(r"^[EWCAX] \[", line)) or bool(re.search(r"[Ss]topped|[Cc]rashed|[Ss]tuck|[Ff]ail|[Aa]bort|[Uu]nable", line))


def cups_echo(line: str) -> bool:
    return False


class PrinterSink:
    """An AppSocket (JetDirect) printer: accepts print data on a port and swallows it; can be powered off or jammed."""

    def __init__(self):
        self.port, self.mode, self.sock, self.held = free_port(), "on", None, []
        self.stop_ev = threading.Event()
        self.power_on()
        threading.Thread(target=self.loop, daemon=True).start()

    def power_on(self) -> None:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(16)
        s.settimeout(0.3)
        self.sock = s

    def power_off(self) -> None:
        s, self.sock = self.sock, None
        if s:
            s.close()

    def drain(self, c: socket.socket) -> None:
        with contextlib.suppress(OSError):
            c.settimeout(30)
            while c.recv(65536):
                pass
        c.close()

    def loop(self) -> None:
        while not self.stop_ev.is_set():
            s = self.sock
            if s is None:
                time.sleep(0.2)
                continue
            try:
                c, _ = s.accept()
            except OSError:
                continue
            if self.mode == "jam":  # takes the connection, never reads
                self.held.append(c)
            else:
                threading.Thread(target=self.drain, args=(c,), daemon=True).start()

    def unjam(self) -> None:
        self.mode = "on"
        for c in self.held:
            with contextlib.suppress(OSError):
                c.close()
        self.held = []

    def close(self) -> None:
        self.stop_ev.set()
        self.unjam()
        self.power_off()


def ipp_request(op: int, uri: str, user: str, rid: int = 1) -> bytes:
    """A minimal IPP/2.0 request with the operation attributes (charset, language, printer-uri, user)."""
    out = struct.pack(">bbhi", 2, 0, op, rid) + b"\x01"
    for tag, name, val in [(0x47, "attributes-charset", "utf-8"), (0x48, "attributes-natural-language", "en"),
                           (0x45, "printer-uri", uri), (0x42, "requesting-user-name", user)]:
        v = val.encode()
        out += struct.pack(">bh", tag, len(name)) + name.encode() + struct.pack(">h", len(v)) + v
    return out + b"\x03"


def ipp_post(port: int, path: str, body: bytes, auth: str | None = None) -> int:
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        h = {"Content-Type": "application/ipp"}
        if auth:
            h["Authorization"] = "Basic " + base64.b64encode(auth.encode()).decode()
        conn.request("POST", path, body=body, headers=h)
        r = conn.getresponse()
        r.read()
        return r.status
    except (OSError, http.client.HTTPException):
        return 0
    finally:
        conn.close()


def source_cups(args) -> Source:
    cupsd = need("/usr/sbin/cupsd", "cups-daemon")
    lp, lpadmin, cancel = need("lp", "cups-client"), need("lpadmin", "cups-client"), need("cancel", "cups-client")
    lpstat, cupsenable = need("lpstat", "cups-client"), need("cupsenable", "cups-client")
    cupsdisable, lpmove = need("cupsdisable", "cups-client"), need("lpmove", "cups-client")
    if not os.path.exists("/usr/lib/cups/filter/pdftops"):
        raise MissingProgram("the cups filters not found -- install them with: apt-get install cups-filters")
    rng = random.Random(f"{args.seed}-cups")
    with tempfile.TemporaryDirectory(prefix="onb10-cups-") as work, Group() as sv:
        os.chmod(work, 0o755)
        for d in ("spool", "spool/tmp", "cache", "state", "log", "ppd", "docs"):
            os.makedirs(os.path.join(work, d))
        for d, mode in (("spool", 0o710), ("spool/tmp", 0o1770), ("cache", 0o770), ("state", 0o755)):
            shutil.chown(os.path.join(work, d), "root", "lp")
            os.chmod(os.path.join(work, d), mode)
        port = free_port()
        logp = os.path.join(work, "log", "error_log")
        conf, files = os.path.join(work, "cupsd.conf"), os.path.join(work, "cups-files.conf")

        def write_conf(extra: str = "", files_extra: str = "", p: int | None = None) -> None:
            write_atomic(conf, CUPSD_CONF.format(port=p or port, work=work, extra=extra))
            write_atomic(files, CUPS_FILES.format(work=work, extra=files_extra))

        write_conf()
        docs = {}  # documents people print
        for i in range(8):
            lines = [" ".join(rng.choices(WORDS + ["the", "and", "report", "total", "order", "invoice"], k=rng.randint(4, 14)))
                     for _ in range(rng.randint(5, 60))]
            docs[f"memo-{i}.txt"] = "\n".join(lines) + "\n"
        for i in range(6):  # label printer jobs: ZPL-like raw data
            docs[f"label-{i}.zpl"] = "".join(f"^XA^FO50,{50 + 30 * k}^ADN,36,20^FD{rng.choice(WORDS).upper()}-{rng.randint(100, 999)}^FS^XZ\n"
                                             for k in range(rng.randint(1, 6)))
        docs["big.txt"] = "".join(f"{n:05d} " + " ".join(rng.choices(WORDS, k=12)) + "\n" for n in range(6000))
        docs["broken-1.pdf"] = "%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >>\nendobj\ngarbage\n"
        docs["broken-2.pdf"] = "%PDF-1.7\n" + "x" * 500 + "\n%%EOF\n"
        docs["broken-3.pdf"] = "%PDF-1.5\n1 0 obj\n<< /Length 999999 >>\nstream\nBT /F1 12 Tf ET\n"
        for name, text in docs.items():
            write_atomic(os.path.join(work, "docs", name), text)
        os.chmod(os.path.join(work, "docs"), 0o755)
        sinks = {name: PrinterSink() for name in ("office", "warehouse", "labels", "frontdesk", "annex")}
        env = dict(os.environ, CUPS_SERVER=os.path.join(work, "cups.sock"))

        def cli(argv: list[str], timeout: float = 20) -> str:
            try:
                p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
                return p.stdout + p.stderr
            except subprocess.TimeoutExpired:
                return ""

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as logf:  # what cupsd says before it opens its ErrorLog goes to the same file
                sv.start("cupsd", [cupsd, "-f", "-c", conf, "-s", files], stdout=logf, stderr=logf, cwd=work)
            if wait:
                wait_port(port)
                time.sleep(0.3)

        def stop() -> None:
            sv.stop("cupsd", signal.SIGTERM, 20)

        def lp_job(printer: str, doc: str, user: str, opts: list[str] | None = None) -> int:
            out = cli([lp, "-U", user, "-d", printer, "-t", doc, *(opts or []), os.path.join(work, "docs", doc)])
            m = re.search(r"request id is \S+-(\d+)", out)
            return int(m.group(1)) if m else 0

        start()
        for name, model in [("office", "drv:///sample.drv/generic.ppd"), ("warehouse", "drv:///sample.drv/generpcl.ppd"),
                            ("labels", None), ("frontdesk", None), ("annex", None)]:
            cli([lpadmin, "-p", name, "-E", "-v", f"socket://127.0.0.1:{sinks[name].port}", "-L", f"{name} room",
                 "-D", f"{name.capitalize()} printer"] + (["-m", model] if model else []))
        for name in ("office", "warehouse"):  # a job that cannot print is aborted, the queue goes on
            cli([lpadmin, "-p", name, "-o", "printer-error-policy=abort-job"])
        cli([lpadmin, "-p", "frontdesk", "-c", "floor2"])
        cli([lpadmin, "-p", "annex", "-c", "floor2"])
        cli([cupsenable, "floor2"])
        cli([need("cupsaccept", "cups-client"), "floor2"])
        log = FileLog(logp)
        log.read_new()  # the set-up (printers added) is not part of the corpus
        say(f"cupsd on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0, "hup": time.time(), "admin": time.time()}
        raw_docs = [d for d in docs if d.endswith(".zpl")]
        text_docs = [d for d in docs if d.startswith("memo")]

        def user_job(r: random.Random) -> None:
            x, user = r.random(), r.choice(USERS)
            if x < 0.4:
                lp_job("labels", r.choice(raw_docs), user, ["-o", "raw"])
            elif x < 0.6:
                lp_job(r.choice(["floor2", "frontdesk", "annex"]), r.choice(raw_docs + text_docs), user, ["-o", "raw"])
            elif x < 0.64:
                lp_job("office", r.choice(text_docs), user, r.choice([[], ["-n", "2"], ["-o", "sides=two-sided-long-edge"]]))
            elif x < 0.65:
                lp_job("warehouse", r.choice(text_docs[:3]), user)
            elif x < 0.85:  # a job held, then released or cancelled by its owner
                j = lp_job(r.choice(["labels", "frontdesk"]), r.choice(raw_docs), user, ["-o", "raw", "-H", "hold"])
                time.sleep(r.uniform(0.1, 0.6))
                if j and r.random() < 0.6:
                    cli([lp, "-U", user, "-i", str(j), "-H", "resume"])
                elif j:
                    cli([cancel, "-U", user, str(j)])
            elif x < 0.9:
                cli(r.choice([[lpstat, "-p"], [lpstat, "-o"], [lpstat, "-t"], [lpstat, "-W", "completed", "-o"]]))
            else:
                lp_job("labels", r.choice(raw_docs), user, ["-o", "raw", "-o", f"job-priority={r.randint(10, 90)}"])

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=user_job, args=(random.Random(rng.random()),)) for _ in range(rng.randint(2, 6))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(40)
            if time.time() - state["admin"] > rng.uniform(8, 16):  # the admin at work
                a = rng.random()
                if a < 0.3:
                    p = rng.choice(["frontdesk", "annex"])
                    cli([cupsdisable, "-r", rng.choice(["toner replaced", "paper jam cleared", "maintenance"]), p])
                    time.sleep(rng.uniform(0.3, 1.5))
                    cli([cupsenable, p])
                elif a < 0.6:
                    cli([lpadmin, "-p", rng.choice(["office", "labels", "frontdesk"]), "-o",
                         rng.choice(["job-quota-period=86400", "job-k-limit=2048", "printer-error-policy=abort-job",
                                     "printer-op-policy=default"])])
                elif a < 0.8:
                    j = lp_job("annex", rng.choice(raw_docs), rng.choice(USERS), ["-o", "raw", "-H", "hold"])
                    if j:
                        cli([lpmove, f"annex-{j}", "frontdesk"])
                        cli([lp, "-i", str(j), "-H", "resume"])
                else:
                    cli([lpadmin, "-d", rng.choice(["office", "labels", "floor2"])])
                state["admin"] = time.time()
            if time.time() - state["hup"] > rng.uniform(25, 40):
                sv.procs["cupsd"].send_signal(signal.SIGHUP)
                state["hup"] = time.time()
                time.sleep(1)
            if state["restarts"] < 2 and elapsed > 20 + 25 * state["restarts"]:
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.05, 0.3))

        try:
            normal = normal_loop(args, log, "cups", round_fn)
            templates = {cups_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, cups_template, cups_problem, cups_echo))

            def restart_clean() -> None:
                sv.stop("cupsd", signal.SIGTERM, 10)
                sv.forget("cupsd")
                write_conf()
                start()

            def wait_job_done(j: int, timeout: float) -> None:
                end = time.time() + timeout
                while j and time.time() < end:
                    if f"-{j} " not in cli([lpstat, "-o"]):
                        return
                    time.sleep(0.5)

            for _ in range(60):  # the queues drain before the breakages start
                if not cli([lpstat, "-o"]).strip():
                    break
                time.sleep(1)
            cli([cancel, "-a"])
            time.sleep(1)
            br.between()
            with Background(user_job, random.Random(rng.random()), (0.4, 1.2)):
                with br.phase("filter_failure"):  # damaged PDFs sent to the PostScript printer: the filter chain fails
                    for doc in ["broken-1.pdf", "broken-2.pdf", "broken-3.pdf"]:
                        with br.occurrence(2.0):
                            wait_job_done(lp_job("office", doc, rng.choice(USERS)), 8)
                        cli([cupsenable, "office"])
                        br.between()
                with br.phase("filter_crash"):  # the Ghostscript step of a big job killed mid-way
                    for sig in [signal.SIGSEGV, signal.SIGKILL, signal.SIGABRT]:
                        with br.occurrence(2.5):
                            j = lp_job("warehouse", "big.txt", rng.choice(USERS))
                            for _ in range(60):
                                gs = [p for p in descendants(sv.procs["cupsd"].pid)
                                      if comm_of(p) in ("gs", "gstoraster") and b"PRINTER=warehouse\0" in environ_of(p)]
                                if gs:
                                    time.sleep(0.5)
                                    kill_pids(gs, sig)
                                    break
                                time.sleep(0.1)
                            wait_job_done(j, 10)
                        cli([cupsenable, "warehouse"])
                        cli([cancel, "-a", "warehouse"])
                        br.between()
                with br.phase("printer_offline"):  # a printer switched off: its jobs wait and never print
                    for name in ["labels", "frontdesk", "office"]:
                        sinks[name].power_off()
                        br.between()
                        with br.occurrence(2.0):
                            j = lp_job(name, rng.choice(raw_docs), rng.choice(USERS), ["-o", "raw"])
                            time.sleep(6)
                        sinks[name].power_on()
                        if j:
                            cli([cancel, str(j)])
                        time.sleep(1)
                        br.between()
                with br.phase("printer_jammed"):  # a printer that takes the job and never finishes it
                    for name, after in [("labels", 5), ("annex", 6)]:
                        sinks[name].mode = "jam"
                        with br.occurrence(2.0):
                            j = lp_job(name, rng.choice(raw_docs), rng.choice(USERS), ["-o", "raw", "-o", f"job-cancel-after={after}"])
                            time.sleep(after + 2)
                        sinks[name].unjam()
                        if j:
                            cli([cancel, str(j)])
                        time.sleep(1)
                        br.between()
                with br.phase("auth_failure"):  # admin operations with wrong passwords / unknown users
                    for op, who in [(0x0010, "alice:hunter2"), (0x0011, "root:toor"), (0x4003, "admin:admin"), (0x0010, "lp:lp")]:
                        with br.occurrence(1.5):
                            ipp_post(port, "/admin/", ipp_request(op, f"ipp://localhost:{port}/printers/labels",
                                                                  who.split(":")[0]), auth=who)
                with br.phase("bad_config_restart"):  # cupsd.conf / cups-files.conf edits with mistakes, cupsd restarted
                    blocker = tcp_blocker()
                    for kw in [{"extra": "MaxCopies lots\n"}, {"extra": "<Location /printers>\n  Order allow,deny\n"},
                               {"p": blocker.getsockname()[1]}, {"extra": "LogLevel verbose\n"},
                               {"files_extra": "ServerBin /nonexistent/lib/cups\n"}, {"extra": "ErrorPolicy explode\n"}]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(2.0):
                            start(wait=False)
                            time.sleep(2.5)
                            lp_job("labels", rng.choice(raw_docs), rng.choice(USERS), ["-o", "raw"])
                            time.sleep(1)
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            stop()
            for sk in sinks.values():
                sk.close()
    return Source("cups", "CUPS (cupsd)", cups_version(),
                  "cupsd ErrorLog at LogLevel info, its stderr appended (`I [05/Dec/2026:20:41:41 +0000] [Job 1] Queued on "
                  "\"labels\" by \"alice\".`, `... [Job 1] Started filter /usr/lib/cups/filter/texttopdf (PID 10805)`, `... "
                  "[Job 1] Started backend /usr/lib/cups/backend/socket (PID 10808)`, `... [Job 1] Job completed.`, `W [...] "
                  "[Job 2] The printer may not exist or is unavailable at this time.`, `E [...] [Job 7] Job stopped due to "
                  "filter errors; ...` followed by the job's recorded debug messages): every job traced from queued through its "
                  "filters and backend to completed / stopped",
                  "cupsd -f (5 AppSocket printers served by python sinks: a PostScript and a PCL printer with drivers, three "
                  "raw queues, a class of two) with lp / cancel / lpstat clients of 12 users: label jobs, raw and text jobs, "
                  "jobs to the class, held jobs released or cancelled, priorities, duplex and copies; an admin disabling and "
                  "enabling printers, changing options, moving jobs, changing the default; SIGHUP reloads every 25-40s, 2 "
                  "clean restarts",
                  "filter_failure (3 damaged PDFs: the filter chain fails, job stopped), filter_crash (3 big jobs whose "
                  "Ghostscript step is killed with SIGSEGV / SIGKILL / SIGABRT), printer_offline (3 printers switched off: "
                  "jobs never print), printer_jammed (2 printers that take the data and never finish: jobs marked stuck), "
                  "auth_failure (4 admin requests with wrong passwords / unknown users), bad_config_restart (6: a bad "
                  "integer, an unclosed <Location>, the port in use, an unknown LogLevel, a missing ServerBin, an unknown "
                  "ErrorPolicy)", normal, br.errors)


def environ_of(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read()
    except OSError:
        return b""


def cups_version() -> str:
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "cups-daemon"], capture_output=True, text=True).stdout
    m = re.match(r"\d+\.\d+(\.\d+)?", out)
    return m.group(0) if m else "unknown"


# --------------------------------------------------------------------------
# clamd (ClamAV daemon, local signature database)
# --------------------------------------------------------------------------

EICAR = rb"X5O!P%@AP[4\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*"
DROPPER = b"powershell -nop -w hidden -enc JABjAGwAaQBlAG4AdAAgAD0A"
MACRO = b"Sub AutoOpen()\r\n  Shell \"cmd /c certutil -urlcache -split -f http://"
CLAMD_CONF = """\
LogTime yes
LogClean yes
LogVerbose yes
ExtendedDetectionInfo yes
Foreground yes
PidFile {work}/clamd.pid
TemporaryDirectory {work}/tmp
DatabaseDirectory {db}
TCPSocket {port}
TCPAddr 127.0.0.1
User clamav
MaxThreads 4
SelfCheck 12
StreamMaxLength 1M
MaxFileSize 2M
MaxScanSize 8M
AlertEncrypted yes
AlertExceedsMax yes
{extra}"""
CLAMD_HEAD = re.compile(r"^(?:(?:WARNING|ERROR): )?\w{3} \w{3} [ \d]\d [\d:]{8} \d{4} -> ")
clamd_template = templater(CLAMD_HEAD, (r"\(127\.0\.0\.1@\d+\)", "(CLIENT)"), (r"\([0-9a-f]{32}:\d+\)", "(HASH)"),
                           (r"/[\w./-]+", "PATH"))


def clamd_problem(line: str) -> bool:
    return bool(re.match(r"^(WARNING|ERROR): |^LibClamAV (Error|Warning)", line)) or bool(
        re.search(r"FOUND$|ERROR$|[Ee]rror|[Ff]ail|[Dd]enied|[Cc]an't|[Uu]nable|[Mm]alformed|[Uu]nknown", line))


def clamd_echo(line: str) -> bool:
    return bool(re.search(r": OK$", line))


def zip_bytes(files: dict, encrypted: bool = False) -> bytes:
    import io
    import zipfile
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    d = bytearray(b.getvalue())
    if encrypted:  # the "encrypted" flag of every entry (a password-protected archive, as mail filters see them)
        for sig, off in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
            i = d.find(sig)
            while i >= 0:
                d[i + off] |= 1
                i = d.find(sig, i + 4)
    return bytes(d)


def clamd_send(port: int, data: bytes, timeout: float = 15) -> bytes:
    out = b""
    with contextlib.suppress(OSError):
        with socket.create_connection(("127.0.0.1", port), 5) as s:
            s.settimeout(timeout)
            s.sendall(data)
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
    return out


def instream(port: int, data: bytes, chunk: int = 8192) -> bytes:
    payload = b"zINSTREAM\0" + b"".join(struct.pack(">I", len(data[i:i + chunk])) + data[i:i + chunk]
                                        for i in range(0, len(data), chunk)) + struct.pack(">I", 0)
    return clamd_send(port, payload)


def source_clamd(args) -> Source:
    clamd = need("/usr/sbin/clamd", "clamav-daemon")
    rng = random.Random(f"{args.seed}-clamd")
    with tempfile.TemporaryDirectory(prefix="onb10-clamd-") as work, Group() as sv:
        os.chmod(work, 0o755)
        db, up, tmp = os.path.join(work, "db"), os.path.join(work, "uploads"), os.path.join(work, "tmp")
        for d in (db, up, tmp):
            os.makedirs(d)
        sigs = [("Onb.Test.Eicar", EICAR), ("Onb.Trojan.PSDropper", DROPPER), ("Onb.Doc.MacroDownloader", MACRO)]

        def write_db(extra: str = "", n_extra: int = 0) -> None:
            lines = [f"{name}:0:*:{data.hex()}" for name, data in sigs]
            lines += [f"Onb.Phish.Kit-{i}:0:*:{('phish-kit-marker-%04d' % i).encode().hex()}" for i in range(n_extra)]
            write_atomic(os.path.join(db, "local.ndb"), "\n".join(lines) + "\n" + extra)

        write_db()
        port = free_port()
        conf, logp = os.path.join(work, "clamd.conf"), os.path.join(work, "clamd.log")

        def write_conf(extra: str = "", p: int | None = None, dbdir: str | None = None) -> None:
            write_atomic(conf, CLAMD_CONF.format(work=work, db=dbdir or db, port=p or port, extra=extra))

        write_conf()
        # what users upload and mail: documents, pages, archives (clean)
        rows = lambda n: "".join(f"{rng.randint(1000, 9999)},{rng.choice(WORDS)},{rng.uniform(1, 500):.2f}\n" for _ in range(n))
        batches = []
        for b in range(12):
            d = os.path.join(up, f"batch-{b:02d}")
            os.makedirs(d)
            for i in range(rng.randint(3, 9)):
                kind = rng.choice(["csv", "txt", "html", "zip", "json", "eml"])
                name = f"{rng.choice(USERS)}-{rng.choice(WORDS)}-{i}.{kind}"
                data = {"csv": rows(rng.randint(5, 200)).encode(),
                        "txt": (" ".join(rng.choices(WORDS, k=200)) + "\n").encode(),
                        "html": f"<html><body><h1>{rng.choice(WORDS)}</h1><p>{' '.join(rng.choices(WORDS, k=50))}</p></body></html>".encode(),
                        "zip": zip_bytes({"a.csv": rows(30), "b.txt": " ".join(rng.choices(WORDS, k=80))}),
                        "json": json.dumps({"user": rng.choice(USERS), "items": rng.sample(WORDS, 5)}).encode(),
                        "eml": (f"From: {rng.choice(USERS)}@example.test\r\nTo: {rng.choice(USERS)}@example.test\r\nSubject: "
                                f"{rng.choice(WORDS)}\r\n\r\n{' '.join(rng.choices(WORDS, k=40))}\r\n").encode()}[kind]
                with open(os.path.join(d, name), "wb") as f:
                    f.write(data)
            batches.append(d)
        bad = os.path.join(work, "incoming")
        os.makedirs(bad)
        chown_tree(work, "clamav")

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as logf:  # clamd in the foreground without LogFile logs to stdout
                sv.start("clamd", [clamd, "-c", conf], stdout=logf, stderr=logf, cwd=work)
            if wait:
                wait_port(port)
                time.sleep(0.3)

        def stop() -> None:
            sv.stop("clamd", signal.SIGTERM, 20)

        def attachment(r: random.Random) -> bytes:
            x = r.random()
            if x < 0.3:
                return rows(r.randint(5, 300)).encode()
            if x < 0.5:
                return zip_bytes({f"{r.choice(WORDS)}.txt": " ".join(r.choices(WORDS, k=300)), "data.csv": rows(40)})
            if x < 0.7:
                return (f"<html><body>{' '.join(r.choices(WORDS, k=400))}</body></html>").encode()
            if x < 0.85:
                return (f"From: {r.choice(USERS)}@example.test\r\nSubject: {r.choice(WORDS)}\r\nMIME-Version: 1.0\r\n"
                        f"Content-Type: multipart/mixed; boundary=XX\r\n\r\n--XX\r\nContent-Type: text/plain\r\n\r\n"
                        f"{' '.join(r.choices(WORDS, k=60))}\r\n--XX\r\nContent-Type: application/octet-stream\r\n"
                        f"Content-Transfer-Encoding: base64\r\n\r\n{base64.b64encode(r.randbytes(600)).decode()}\r\n--XX--\r\n").encode()
            return r.randbytes(r.randint(100, 40000))

        def client(r: random.Random) -> None:
            x = r.random()
            if x < 0.55:  # the mail filter scanning attachments
                instream(port, attachment(r))
            elif x < 0.75:  # the upload service scanning a file
                d = r.choice(batches)
                clamd_send(port, b"zSCAN " + os.path.join(d, r.choice(os.listdir(d))).encode() + b"\0")
            elif x < 0.87:  # the nightly job scanning a directory
                clamd_send(port, r.choice([b"zCONTSCAN ", b"zMULTISCAN "]) + r.choice(batches).encode() + b"\0")
            else:  # monitoring
                clamd_send(port, r.choice([b"zPING\0", b"zVERSION\0", b"nSTATS\n", b"zPING\0"]))

        start()
        log = FileLog(logp)
        say(f"clamd on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0, "update": time.time(), "n_extra": 0}

        def round_fn(n: int, elapsed: float) -> None:
            for _ in range(rng.randint(5, 12)):
                client(rng)
            if time.time() - state["update"] > rng.uniform(15, 25):  # a signature update, then RELOAD
                state["n_extra"] += rng.randint(1, 3)
                write_db(n_extra=state["n_extra"])
                chown_tree(db, "clamav")
                clamd_send(port, b"zRELOAD\0")
                state["update"] = time.time()
                time.sleep(1)
            if state["restarts"] < 2 and elapsed > 20 + 25 * state["restarts"]:
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.05, 0.25))

        def drop(name: str, data: bytes, mode: int = 0o644, owner: str = "clamav") -> str:
            path = os.path.join(bad, name)
            with open(path, "wb") as f:
                f.write(data)
            shutil.chown(path, owner, owner)
            os.chmod(path, mode)
            return path

        try:
            normal = normal_loop(args, log, "clamd", round_fn)
            templates = {clamd_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, clamd_template, clamd_problem, clamd_echo))

            def restart_clean() -> None:
                sv.stop("clamd", signal.SIGTERM, 10)
                sv.forget("clamd")
                write_conf()
                write_db(n_extra=state["n_extra"])
                chown_tree(db, "clamav")
                start()

            with Background(client, random.Random(rng.random()), (0.2, 0.8)):
                with br.phase("malware_found"):  # infected attachments and uploads
                    for how, data in [("stream", b"Hello,\r\nplease see the attached file.\r\n" + EICAR),
                                      ("scan", b"@echo off\r\n" + DROPPER + b"\r\n"),
                                      ("scan", zip_bytes({"invoice-2026.txt": EICAR, "readme.txt": "open the invoice"})),
                                      ("stream", b"\xd0\xcf\x11\xe0" + bytes(60) + MACRO + bytes(40)),
                                      ("contscan", zip_bytes({"payload.bat": DROPPER}))]:
                        with br.occurrence(1.5):
                            if how == "stream":
                                instream(port, data)
                            else:
                                path = drop(f"{rng.choice(USERS)}-{rng.randint(100, 999)}.{'zip' if data[:2] == b'PK' else 'bin'}", data)
                                clamd_send(port, (b"zCONTSCAN " if how == "contscan" else b"zSCAN ") + path.encode() + b"\0")
                with br.phase("heuristic_alert"):  # password-protected archives, files over MaxFileSize
                    for data in [zip_bytes({"statement.pdf": b"%PDF-1.4 " * 50}, encrypted=True), rng.randbytes(3 << 20),
                                 zip_bytes({"photos/img1.jpg": rng.randbytes(2000), "photos/img2.jpg": rng.randbytes(3000)}, encrypted=True)]:
                        with br.occurrence(1.5):
                            path = drop(f"{rng.choice(USERS)}-{rng.randint(100, 999)}.{'zip' if data[:2] == b'PK' else 'iso'}", data)
                            clamd_send(port, b"zSCAN " + path.encode() + b"\0")
                with br.phase("access_denied"):  # uploads clamd's user cannot read (left root-only by a broken job)
                    for mode in [0o600, 0o000, 0o640]:
                        with br.occurrence(1.5):
                            path = drop(f"{rng.choice(USERS)}-{rng.randint(100, 999)}.csv", rows(20).encode(), mode, "root")
                            clamd_send(port, b"zSCAN " + path.encode() + b"\0")
                with br.phase("missing_path"):  # scan requests for files already gone
                    for name in ["quarantine/2026-12-05", "uploads/batch-99/report.csv"]:
                        with br.occurrence(1.5):
                            clamd_send(port, b"zSCAN " + os.path.join(work, name).encode() + b"\0")
                with br.phase("stream_limit"):  # attachments over StreamMaxLength 1M
                    for size in [2 << 20, 1536 << 10, 5 << 20]:
                        with br.occurrence(1.5):
                            instream(port, rng.randbytes(size), chunk=65536)
                with br.phase("broken_database"):  # a signature update that left broken files, then RELOAD
                    for extra in ["Onb.Broken.Sig:0:*:zz11\n", "Onb.Half.Sig:0\n", "this is not a signature\n"]:
                        write_db(extra=extra, n_extra=state["n_extra"])
                        chown_tree(db, "clamav")
                        with br.occurrence(3.0):
                            clamd_send(port, b"zRELOAD\0")
                        write_db(n_extra=state["n_extra"])
                        if sv.procs["clamd"].poll() is not None:
                            restart_clean()
                        else:
                            clamd_send(port, b"zRELOAD\0")
                        time.sleep(2)
                        br.between()
                with br.phase("bad_config_restart"):  # clamd.conf edits with mistakes, clamd restarted
                    blocker = tcp_blocker()
                    for kw in [{"extra": "MaxThreads many\n"}, {"extra": "ScanArchives yes\n"}, {"p": blocker.getsockname()[1]},
                               {"dbdir": "/nonexistent/clamav/db"}, {"extra": "LocalSocket /nonexistent/clamav/clamd.ctl\n"}]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(2.0):
                            start(wait=False)
                            time.sleep(2.5)
                            clamd_send(port, b"zPING\0", timeout=2)
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            stop()
    return Source("clamd", "ClamAV clamd", version_of([clamd, "--version"]),
                  "clamd in the foreground logging to stdout with LogTime / LogClean / LogVerbose (`Sat Dec  5 20:52:47 2026 "
                  "-> instream(127.0.0.1@49762): OK`, `... -> /path/batch-03/alice-cobalt-2.csv: OK`, `... -> Reading databases "
                  "from /path/db`, `... -> SelfCheck: Database status OK.`, `... -> instream(127.0.0.1@49762): "
                  "Onb.Test.Eicar.UNOFFICIAL(6a07...:107) FOUND`, `WARNING: Sat Dec  5 ... -> ...`, `LibClamAV Error: ...`)",
                  "clamd (as clamav, a local signature database of 3 + N body signatures, SelfCheck 12s, 4 threads) with a "
                  "python mail filter streaming attachments (INSTREAM: CSVs, archives, pages, mails, binaries), an upload "
                  "service scanning files (SCAN), nightly directory scans (CONTSCAN / MULTISCAN), monitoring (PING, VERSION, "
                  "STATS); signature updates followed by RELOAD every 15-25s, 2 clean restarts",
                  "malware_found (5 infected attachments / uploads / archives), heuristic_alert (3: encrypted archives, a "
                  "file over MaxFileSize), access_denied (3 uploads clamd cannot read), missing_path (2 scans of files "
                  "already gone), stream_limit (3 streams over StreamMaxLength), broken_database (3 RELOADs of a broken "
                  "signature file), bad_config_restart (5: a non-numeric option, an unknown option, the port in use, a "
                  "missing database directory, a local socket in a missing directory)", normal, br.errors)


# --------------------------------------------------------------------------
# rabbitmq (rabbitmq-server, AMQP 0-9-1 clients)
# --------------------------------------------------------------------------

RABBIT_CONF = """\
listeners.tcp.default = 127.0.0.1:{port}
log.file.level = info
log.console = false
loopback_users = none
heartbeat = 30
{extra}"""
RABBIT_USERS = {"orders-svc": "Orders-amqp-11", "billing-svc": "Billing-amqp-22", "web": "Web-amqp-33", "reporting": "Reports-amqp-44",
                "notifier": "Notify-amqp-55"}
RABBIT_DRIVER = r"""
import json, socket, sys, time
import amqp

PORT = int(sys.argv[1])
QUEUES = {"orders": True, "invoices": True, "emails": False, "thumbnails": False, "audit": True}


def conn(user, pw, vhost="/", heartbeat=0, name=None):
    c = amqp.Connection("127.0.0.1:%d" % PORT, userid=user, password=pw, virtual_host=vhost, heartbeat=heartbeat,
                        connect_timeout=5, client_properties={"connection_name": name} if name else None)
    c.connect()
    return c


def run(c):
    k = c["kind"]
    if k == "session":
        x = conn(c["user"], c["pw"], c.get("vhost", "/"), name=c.get("name"))
        ch = x.channel()
        q = c["queue"]
        ch.queue_declare(q, durable=QUEUES.get(q, False), auto_delete=False)
        if c.get("exchange"):
            ch.exchange_declare(c["exchange"], "topic", durable=True, auto_delete=False)
            ch.queue_bind(q, c["exchange"], routing_key=q + ".#")
        for i in range(c.get("publish", 0)):
            ch.basic_publish(amqp.Message(json.dumps({"n": i, "q": q}), delivery_mode=2 if QUEUES.get(q) else 1),
                             exchange=c.get("exchange", ""), routing_key=(q + ".new") if c.get("exchange") else q)
        for _ in range(c.get("get", 0)):
            m = ch.basic_get(q)
            if m is None:
                break
            ch.basic_ack(m.delivery_tag)
        time.sleep(c.get("hold", 0))
        ch.close()
        x.close()
    elif k == "login":
        x = conn(c["user"], c["pw"], c.get("vhost", "/"))
        x.close()
    elif k == "channel":  # an operation the broker refuses: the channel is closed
        x = conn(c["user"], c["pw"], c.get("vhost", "/"))
        ch = x.channel()
        op = c["op"]
        try:
            if op == "mismatch":
                ch.queue_declare(c["queue"], durable=not QUEUES.get(c["queue"], False), auto_delete=False)
            elif op == "missing_queue":
                ch.basic_consume(c["queue"], callback=lambda m: None)
            elif op == "missing_exchange":
                ch.basic_publish(amqp.Message("x"), exchange=c["exchange"], routing_key="a")
                ch.queue_declare("emails", durable=False, auto_delete=False)
            elif op == "type_mismatch":
                ch.exchange_declare(c["exchange"], "fanout", durable=True, auto_delete=False)
            elif op == "denied":
                ch.basic_publish(amqp.Message("x"), exchange="", routing_key=c["queue"])
                ch.queue_declare(c["queue"], durable=QUEUES.get(c["queue"], False), auto_delete=False)
        finally:
            try:
                x.close()
            except Exception:
                pass
    elif k == "stall":  # a client that stops sending heartbeats (frozen)
        x = conn(c["user"], c["pw"], heartbeat=c["heartbeat"])
        x.channel()
        time.sleep(c["sleep"])
        try:
            x.sock.close() if hasattr(x, "sock") else x.transport.close()
        except Exception:
            pass
    elif k == "many":  # several connections at once, held
        held = []
        for _ in range(c["n"]):
            try:
                held.append(conn(c["user"], c["pw"], c.get("vhost", "/")))
            except Exception:
                pass
        time.sleep(c.get("hold", 1))
        for h in held:
            try:
                h.close()
            except Exception:
                pass
    elif k == "blocked":  # a publisher while a resource alarm is set
        x = conn(c["user"], c["pw"])
        ch = x.channel()
        for i in range(5):
            ch.basic_publish(amqp.Message("x" * 1000), routing_key="orders")
        time.sleep(c.get("hold", 2))
        try:
            x.transport.close()
        except Exception:
            pass


for line in sys.stdin:
    try:
        run(json.loads(line))
        print("ok", flush=True)
    except Exception as e:
        print("error " + repr(e)[:200], flush=True)
"""
RABBIT_HEAD = re.compile(r"^\d{4}-\d\d-\d\d [\d:.]+\+\d\d:\d\d ")
rabbit_template = templater(RABBIT_HEAD, (r"<\d+\.\d+\.\d+>", "<PID>"), (r"127\.0\.0\.1:\d+", "ADDR"), (r"'[^']*'", "'_'"),
                            (r"/[\w./-]+", "PATH"))


def rabbit_problem(line: str) -> bool:
    return bool(re.match(r"^\S+ \S+ \[(warning|error|critical|alert|emergency)\]", line)) or bool(
        re.search(r"[Ee]rror|[Rr]efused|[Ff]ail|alarm|[Bb]locked|missed heartbeats|exception|[Ii]nsufficient", line))


def rabbit_echo(line: str) -> bool:
    return bool(re.search(r"\] <[\d.]+> (accepting AMQP connection|connection <[\d.]+> \(\S+ -> \S+\): user '[^']*' authenticated"
                          r"|closing AMQP connection <[\d.]+> \(\S+ -> \S+, vhost: '[^']*', user: '[^']*'\)$)", line))


def source_rabbitmq(args) -> Source:
    server = need("/usr/lib/rabbitmq/bin/rabbitmq-server", "rabbitmq-server")
    ctl = need("/usr/lib/rabbitmq/bin/rabbitmqctl", "rabbitmq-server")
    epmd = need("epmd", "erlang-base")
    if run_quiet([SYS_PY, "-c", "import amqp"], 30) != 0:
        raise MissingProgram("py-amqp for /usr/bin/python3 not found -- install it with: apt-get install python3-amqp")
    rng = random.Random(f"{args.seed}-rabbitmq")
    with tempfile.TemporaryDirectory(prefix="onb10-rabbitmq-") as work, Group() as sv:
        os.chmod(work, 0o755)
        for d in ("mnesia", "log", "home"):
            os.makedirs(os.path.join(work, d))
        cookie = os.path.join(work, "home", ".erlang.cookie")
        write_atomic(cookie, "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(20)))
        os.chmod(cookie, 0o400)
        write_atomic(os.path.join(work, "driver.py"), RABBIT_DRIVER)
        write_atomic(os.path.join(work, "enabled_plugins"), "[].\n")
        port, dist_port, epmd_port = free_port(), free_port(), free_port()
        conf, logp = os.path.join(work, "rabbitmq.conf"), os.path.join(work, "log", "rabbit.log")

        def write_conf(extra: str = "", p: int | None = None) -> None:
            write_atomic(conf, RABBIT_CONF.format(port=p or port, extra=extra))

        write_conf()
        chown_tree(work, "rabbitmq")
        env = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "HOME": os.path.join(work, "home"), "LANG": "C.UTF-8",
               "RABBITMQ_NODENAME": "onb10@localhost", "RABBITMQ_MNESIA_BASE": os.path.join(work, "mnesia"),
               "RABBITMQ_LOG_BASE": os.path.join(work, "log"), "RABBITMQ_LOGS": logp, "RABBITMQ_CONFIG_FILE": conf,
               "RABBITMQ_ENABLED_PLUGINS_FILE": os.path.join(work, "enabled_plugins"), "RABBITMQ_DIST_PORT": str(dist_port),
               "ERL_EPMD_PORT": str(epmd_port), "RABBITMQ_PID_FILE": os.path.join(work, "rabbit.pid")}
        sv.start("epmd", as_user("rabbitmq", [epmd, "-port", str(epmd_port), "-address", "127.0.0.1"]),
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        time.sleep(0.5)

        def start(wait: bool = True) -> None:
            with open(logp, "ab") as logf:  # what the node prints before its log is set up goes to the same file
                shutil.chown(logp, "rabbitmq", "rabbitmq")
                sv.start("rabbit", as_user("rabbitmq", [server]), stdout=logf, stderr=logf, cwd=work, env=env)
            if wait:
                wait_port(port, 60)
                time.sleep(0.5)

        def stop() -> None:
            sv.stop("rabbit", signal.SIGTERM, 30)

        def rctl(*a: str, timeout: float = 30) -> int:
            try:
                return subprocess.run(as_user("rabbitmq", [ctl, "-n", "onb10@localhost", *a]), env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, timeout=timeout).returncode
            except subprocess.TimeoutExpired:
                return -1

        start()
        for u, pw in RABBIT_USERS.items():
            rctl("add_user", u, pw)
        rctl("add_vhost", "shop")
        rctl("add_vhost", "batch")
        for u in RABBIT_USERS:
            if u != "reporting":
                rctl("set_permissions", "-p", "/", u, ".*", ".*", ".*")
                rctl("set_permissions", "-p", "shop", u, ".*", ".*", ".*")
        rctl("set_permissions", "-p", "/", "reporting", "^$", "^$", ".*")  # reads only
        rctl("set_permissions", "-p", "batch", "billing-svc", ".*", ".*", ".*")
        drivers = []
        for _ in range(3):
            drivers.append(subprocess.Popen([SYS_PY, os.path.join(work, "driver.py"), str(port)], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1,
                                            start_new_session=True))
        locks = [threading.Lock() for _ in drivers]

        def send(cmd: dict, i: int = 0) -> str:
            with locks[i]:
                try:
                    drivers[i].stdin.write(json.dumps(cmd) + "\n")
                    drivers[i].stdin.flush()
                    return drivers[i].stdout.readline()
                except (OSError, ValueError):
                    return ""

        def session(r: random.Random, i: int = 0) -> None:
            user = r.choice(["orders-svc", "orders-svc", "billing-svc", "web", "notifier", "reporting"])
            q = {"orders-svc": "orders", "billing-svc": "invoices", "web": r.choice(["thumbnails", "emails"]),
                 "notifier": "emails", "reporting": "audit"}[user]
            cmd = {"kind": "session", "user": user, "pw": RABBIT_USERS[user], "queue": q, "name": f"{user}-{r.randint(1, 9)}",
                   "vhost": "/" if user == "reporting" or r.random() < 0.6 else "shop",
                   "publish": 0 if user == "reporting" else r.randint(0, 8), "get": r.randint(0, 8)}
            if user == "reporting":  # reads what exists; cannot declare (configure permission) - use a passive get
                cmd = {"kind": "login", "user": user, "pw": RABBIT_USERS[user]}
            elif r.random() < 0.2:
                cmd["exchange"] = "shop.events"
            send(cmd, i)

        time.sleep(1)
        log = FileLog(logp)
        log.read_new()  # the set-up (users, vhosts) is not part of the corpus
        say(f"rabbitmq on 127.0.0.1:{port}; normal phase...")
        state = {"restarts": 0, "admin": time.time()}

        def round_fn(n: int, elapsed: float) -> None:
            threads = [threading.Thread(target=lambda i=i, rr=random.Random(rng.random()): [session(rr, i) for _ in range(rr.randint(1, 4))])
                       for i in range(len(drivers))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            if time.time() - state["admin"] > rng.uniform(15, 30):  # the admin at work
                a = rng.random()
                if a < 0.4:
                    rctl("set_policy", "-p", "shop", rng.choice(["ttl", "max-len", "lazy"]), "^(emails|thumbnails)$",
                         rng.choice(['{"message-ttl": 600000}', '{"max-length": 10000}', '{"queue-mode": "lazy"}']))
                elif a < 0.7:
                    rctl("list_queues", "-p", rng.choice(["/", "shop"]))
                else:
                    u = f"temp-{rng.choice(WORDS)}"
                    rctl("add_user", u, "Temp-pass-1")
                    rctl("delete_user", u)
                state["admin"] = time.time()
            if state["restarts"] < 2 and elapsed > 15 + 25 * state["restarts"]:
                stop()
                time.sleep(0.3)
                start()
                state["restarts"] += 1
            time.sleep(rng.uniform(0.03, 0.15))

        try:
            normal = normal_loop(args, log, "rabbitmq", round_fn)
            templates = {rabbit_template(x) for x in normal}
            br = Breaker(log, entry_selector(templates, rabbit_template, rabbit_problem, rabbit_echo,
                                             head=lambda line: bool(RABBIT_HEAD.match(line))))

            def restart_clean() -> None:
                sv.stop("rabbit", signal.SIGTERM, 20)
                sv.forget("rabbit")
                write_conf()
                start()

            with Background(lambda r: session(r, 0), random.Random(rng.random()), (0.2, 0.6)):
                with br.phase("wrong_password"):  # services deployed with old passwords, unknown users
                    for user, pw in [("orders-svc", "Orders-amqp-10"), ("billing-svc", ""), ("web", "web"), ("admin", "admin")]:
                        with br.occurrence(1.5):
                            send({"kind": "login", "user": user, "pw": pw}, 1)
                with br.phase("vhost_denied"):  # users without permissions on a vhost, a vhost that does not exist
                    for user, vhost in [("reporting", "shop"), ("web", "batch"), ("orders-svc", "staging")]:
                        with br.occurrence(1.5):
                            send({"kind": "login", "user": user, "pw": RABBIT_USERS[user], "vhost": vhost}, 1)
                with br.phase("channel_error"):  # operations the broker refuses: the channel is closed
                    for cmd in [{"op": "mismatch", "queue": "orders", "user": "orders-svc"},
                                {"op": "missing_queue", "queue": "refunds", "user": "billing-svc"},
                                {"op": "missing_exchange", "exchange": "shop.legacy", "user": "web"},
                                {"op": "type_mismatch", "exchange": "shop.events", "user": "notifier"},
                                {"op": "denied", "queue": "audit", "user": "reporting"}]:
                        with br.occurrence(1.5):
                            send({"kind": "channel", "pw": RABBIT_USERS[cmd["user"]], **cmd}, 1)
                with br.phase("missed_heartbeats"):  # clients frozen (a GC pause, SIGSTOP): no heartbeats
                    for hb in [2, 3]:
                        with br.occurrence(2.0):
                            send({"kind": "stall", "user": "notifier", "pw": RABBIT_USERS["notifier"], "heartbeat": hb,
                                  "sleep": hb * 3 + 1}, 1)
                with br.phase("connection_limit"):  # a vhost's connection limit exhausted by a batch job
                    rctl("set_vhost_limits", "-p", "batch", '{"max-connections": 3}')
                    br.between()
                    for n in [5, 6]:
                        with br.occurrence(2.0):
                            send({"kind": "many", "n": n, "user": "billing-svc", "pw": RABBIT_USERS["billing-svc"],
                                  "vhost": "batch", "hold": 1}, 1)
                    rctl("clear_vhost_limits", "-p", "batch")
                    br.between()
                with br.phase("resource_alarm"):  # the memory / disk limits crossed: publishers blocked
                    for what in ["memory", "disk"]:
                        with br.occurrence(2.0):
                            if what == "memory":
                                rctl("set_vm_memory_high_watermark", "0.0001")
                            else:
                                rctl("set_disk_free_limit", "50000GB")
                            time.sleep(1.5)
                            send({"kind": "blocked", "user": "orders-svc", "pw": RABBIT_USERS["orders-svc"], "hold": 2}, 1)
                        if what == "memory":
                            rctl("set_vm_memory_high_watermark", "0.4")
                        else:
                            rctl("set_disk_free_limit", "50MB")
                        time.sleep(2)
                        br.between()
                with br.phase("protocol_garbage"):  # not AMQP 0-9-1 on the port
                    for data in [b"GET / HTTP/1.1\r\nHost: rabbit\r\n\r\n", TLS_HELLO, b"AMQP\x01\x01\x00\x0a", b"AMQP\x00\x01\x00\x00"]:
                        with br.occurrence(1.5):
                            raw_send(port, data, wait=0.5)
                with br.phase("bad_config_restart"):  # rabbitmq.conf edits with mistakes, the node restarted
                    blocker = tcp_blocker()
                    for kw in [{"extra": "listeners.tcp.backup = 127.0.0.1:notaport\n"}, {"extra": "heartbeats = 30\n"},
                               {"p": blocker.getsockname()[1]}, {"extra": "vm_memory_high_watermark.relative = 1.5\n"}]:
                        stop()
                        br.between()
                        write_conf(**kw)
                        with br.occurrence(2.0):
                            start(wait=False)
                            time.sleep(8)
                            send({"kind": "login", "user": "web", "pw": RABBIT_USERS["web"]}, 1)
                        restart_clean()
                        br.between()
                    blocker.close()
        finally:
            for d in drivers:
                with contextlib.suppress(OSError):
                    d.stdin.close()
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(d.pid, signal.SIGKILL)
            stop()
            sv.stop("epmd", signal.SIGTERM, 5)
    return Source("rabbitmq", "RabbitMQ (rabbitmq-server)", rabbit_version(),
                  "rabbit log file at level info, the node's stdout appended (`2026-12-05 20:56:17.852955+00:00 [info] "
                  "<0.6942.0> accepting AMQP connection <0.6942.0> (127.0.0.1:41802 -> 127.0.0.1:37369)`, `... connection "
                  "<0.6942.0> (...): user 'web' authenticated and granted access to vhost '/'`, `... [error] <0.7283.0> Channel "
                  "error on connection ...` with continuation lines under the same prefix, the boot lines, the banner)",
                  "rabbitmq-server (3.10, own epmd, as rabbitmq; 3 vhosts, 5 users, one of them read-only) with python AMQP "
                  "clients of 5 services: connections with client-provided names publishing to and getting from durable and "
                  "transient queues, a topic exchange with bindings; an admin setting policies, listing queues, adding and "
                  "deleting users with rabbitmqctl; 2 clean restarts",
                  "wrong_password (4: old / blank / default passwords, an unknown user), vhost_denied (3: no permission, unknown vhost), "
                  "channel_error (5: inequivalent queue / exchange arguments, a missing queue / exchange, a write refused), "
                  "missed_heartbeats (2 frozen clients), connection_limit (2 batch jobs over a vhost's max-connections 3), "
                  "resource_alarm (2: the memory watermark and the disk free limit crossed, a publisher blocked), "
                  "protocol_garbage (4: HTTP, TLS, AMQP 0-10, AMQP 1.0 headers), bad_config_restart (4: a listener port that "
                  "is not a number, an unknown setting, the port in use, a relative watermark over 1)", normal, br.errors)


def rabbit_version() -> str:
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "rabbitmq-server"], capture_output=True, text=True).stdout
    m = re.match(r"\d+\.\d+(\.\d+)?", out)
    return m.group(0) if m else "unknown"


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def main() -> int:
    return run(__doc__, "onboarding_tenth", SOURCES, globals(), seed=10101, min_normal_s=60,
               root_for="programs dropping to their own users")


if __name__ == "__main__":
    sys.exit(main())
