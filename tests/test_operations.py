"""The operations files in deploy/, checked with the real programs (Debian packages ``prometheus`` and
``prometheus-alertmanager``): promtool and amtool on the shipped configs, promtool's rule unit tests,
and a real Prometheus scraping a running worker and tailer while every query of the Grafana dashboard
is asked of it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from logstream.service.broker import EmbeddedBroker, free_port
from logstream.service.metrics import REGISTRY, TAILER_REGISTRY
from service_helpers import RESULT_TIMEOUT_S, Scenario, metric, model_dir_or_skip

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
RULES = DEPLOY / "prometheus" / "rules.yml"
RULE_TESTS = DEPLOY / "prometheus" / "rules_test.yml"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "logstream.json"
PROMTOOL = shutil.which("promtool")
AMTOOL = shutil.which("amtool")
PROMETHEUS = shutil.which("prometheus")
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def need(program: str | None, name: str) -> str:
    if program is None:
        pytest.skip(f"{name} is not installed (Debian package prometheus / prometheus-alertmanager; "
                    "scripts/setup installs them)")
    return program


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def rules() -> list[dict]:
    return [rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]]


def dashboard_queries() -> list[str]:
    return [t["expr"] for panel in json.loads(DASHBOARD.read_text())["panels"] for t in panel["targets"]]


def metric_names(expression: str) -> set[str]:
    """The logstream metric families an expression reads (histogram series named by their family)."""
    names = set(re.findall(r"\blogstream_[a-z_]+", expression))
    out = set()
    for name in names:
        for suffix in HISTOGRAM_SUFFIXES:
            if name.endswith(suffix):
                name = name[: -len(suffix)]
        out.add(name)
    return out


def exported_families() -> set[str]:
    families = set()
    for registry in (REGISTRY, TAILER_REGISTRY):
        for family in registry.collect():
            families.add(family.name + "_total" if family.type == "counter" else family.name)
    return families


# --- static checks with the real tools ----------------------------------------------------------

def test_prometheus_config_and_rules_pass_promtool(tmp_path):
    promtool = need(PROMTOOL, "promtool")
    checked = run(promtool, "check", "config", str(DEPLOY / "prometheus" / "prometheus.yml"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS" in checked.stdout
    checked = run(promtool, "check", "rules", str(RULES))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"{len(rules())} rules found" in checked.stdout


def test_every_rule_fires_in_its_promtool_unit_test(tmp_path):
    promtool = need(PROMTOOL, "promtool")
    tested = run(promtool, "test", "rules", str(RULE_TESTS))
    assert tested.returncode == 0, tested.stdout + tested.stderr
    cases = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    fired = {case["alertname"] for test in cases for case in test["alert_rule_test"] if case["exp_alerts"]}
    assert fired == {rule["alert"] for rule in rules()}  # every rule has a case where it fires
    # and the unit tests can fail: a rule that never fires is caught
    broken = tmp_path / "rules.yml"
    broken.write_text(RULES.read_text().replace("expr: increase(logstream_dead_letters_total[10m]) > 0",
                                                "expr: increase(logstream_dead_letters_total[10m]) > 1e9"))
    (tmp_path / "rules_test.yml").write_text(RULE_TESTS.read_text())
    failed = run(promtool, "test", "rules", str(tmp_path / "rules_test.yml"))
    assert failed.returncode != 0 and "LogstreamDeadLetters" in failed.stdout + failed.stderr


def test_alertmanager_config_passes_amtool():
    amtool = need(AMTOOL, "amtool")
    checked = run(amtool, "check-config", str(DEPLOY / "alertmanager" / "alertmanager.yml"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS" in checked.stdout


def test_every_metric_the_rules_and_dashboard_read_is_exported():
    used = set().union(*(metric_names(rule["expr"]) for rule in rules()),
                       *(metric_names(query) for query in dashboard_queries()))
    assert len(used) >= 15
    missing = used - exported_families()
    assert not missing, f"read by the rules or the dashboard but exported by nobody: {sorted(missing)}"


def test_dashboard_panels_read_the_provisioned_datasource():
    datasource = yaml.safe_load((DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml")
                                .read_text())["datasources"][0]
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["panels"]
    for panel in dashboard["panels"]:
        assert panel["datasource"]["uid"] == datasource["uid"], panel["title"]
        assert panel["targets"], panel["title"]
        assert all(t["datasource"]["uid"] == datasource["uid"] for t in panel["targets"]), panel["title"]
    titles = " ".join(p["title"].lower() for p in dashboard["panels"])
    for topic in ("lines", "latency", "threshold", "alerts", "cache", "lag", "dead letters", "model"):
        assert topic in titles, topic


# --- a real Prometheus scraping a running worker and tailer ------------------------------------

class Prometheus:
    def __init__(self, workdir: Path, targets: dict[str, str]):
        self.port = free_port()
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(RULES)],
            "scrape_configs": [{"job_name": job, "static_configs": [{"targets": [target]}]}
                               for job, target in targets.items()],
        }
        (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.log = open(workdir / "prometheus.log", "wb")
        self.process = subprocess.Popen(
            [need(PROMETHEUS, "prometheus"), f"--config.file={workdir / 'prometheus.yml'}",
             f"--storage.tsdb.path={workdir / 'data'}", f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT)

    def get(self, path: str, **params) -> dict:
        url = f"http://127.0.0.1:{self.port}{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
        return json.loads(urllib.request.urlopen(url, timeout=10).read())

    def query(self, expression: str) -> list:
        answer = self.get("/api/v1/query", query=expression)
        assert answer["status"] == "success", (expression, answer)
        return answer["data"]["result"]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)
        self.log.close()


def wait_for(condition, what: str, timeout_s: float = RESULT_TIMEOUT_S, pause_s: float = 0.5) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(pause_s)


@pytest.mark.slow
def test_prometheus_scrapes_a_running_worker_and_tailer_and_the_dashboard_queries_return_data(tmp_path):
    model_dir_or_skip()
    need(PROMETHEUS, "prometheus")
    lines = (ROOT / "sample_logs" / "loghub" / "OpenSSH" / "OpenSSH_2k.log").read_text().splitlines()
    log_file = tmp_path / "auth.log"
    log_file.write_text("\n".join(lines[:200]) + "\n")
    tailer_port = free_port()
    with EmbeddedBroker() as broker:
        scenario = Scenario(broker.bootstrap_servers, tmp_path, settings={"LOGSTREAM_SCORING__THRESHOLD": "-1"})
        scenario.create_topics()
        worker = scenario.worker()
        env = {k: v for k, v in os.environ.items() if not k.startswith("LOGSTREAM_")}
        env.update(LOGSTREAM_KAFKA__INPUT_TOPIC=scenario.input_topic, LOGSTREAM_TAIL__METRICS_PORT=str(tailer_port),
                   LOGSTREAM_TAIL__POLL_INTERVAL_S="0.1")
        tailer = subprocess.Popen([sys.executable, "-m", "logstream.cli", "tail", str(log_file), "--checkpoint",
                                   str(tmp_path / "cp.json"), "--bootstrap-servers", broker.bootstrap_servers],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        prometheus = Prometheus(tmp_path, {"logstream-worker": f"127.0.0.1:{scenario.metrics_port}",
                                           "logstream-tailer": f"127.0.0.1:{tailer_port}"})
        try:
            wait_for(lambda: metric(scenario.metrics_port, "logstream_ready") == 1, "the worker to be ready")
            # lines keep arriving while Prometheus scrapes, so every rate has something to show
            for start in range(200, 800, 100):
                with log_file.open("a") as f:
                    f.write("\n".join(lines[start:start + 100]) + "\n")
                time.sleep(2)
            wait_for(lambda: metric(scenario.metrics_port, "logstream_entries_scored_total") >= 500,
                     "the worker to score the tailed lines", pause_s=1)
            wait_for(lambda: prometheus.query('logstream_tailer_lines_total{job="logstream-tailer"} >= 700'),
                     "Prometheus to scrape the tailer's count", timeout_s=60)
            assert prometheus.query('up{job="logstream-worker"} == 1')
            assert prometheus.query('logstream_alerts_total{sink="topic"} > 0')  # the topic is a counted sink
            empty = [q for q in dashboard_queries()
                     if not prometheus.query(q.replace("$__rate_interval", "1m"))]
            assert not empty, f"dashboard queries with no data from a running worker: {empty}"
            loaded = prometheus.get("/api/v1/rules")["data"]["groups"]
            wait_for(lambda: all(r["health"] == "ok" and r.get("lastEvaluation", "").startswith("2")
                                 for g in prometheus.get("/api/v1/rules")["data"]["groups"] for r in g["rules"]),
                     "every rule to be evaluated", timeout_s=30)
            assert {r["name"] for g in loaded for r in g["rules"]} == {r["alert"] for r in rules()}
            firing = {a["labels"]["alertname"] for a in prometheus.get("/api/v1/alerts")["data"]["alerts"]}
            assert "LogstreamWorkerDown" not in firing and "LogstreamTailerDown" not in firing
        finally:
            prometheus.stop()
            tailer.terminate()
            tailer.wait(30)
            worker.stop()
