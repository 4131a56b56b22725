"""docker-compose.yml and the Kubernetes manifest, checked without Docker.

The structure is checked as data (services, dependencies, health check, KRaft settings, every
``LOGSTREAM_...`` variable a real setting, every command a valid ``logstream`` command line), then
the compose file's own commands and environments run as plain processes against the embedded
broker (its address substituted for ``kafka:9092``), and alerts must come out of the follower.
"""

from __future__ import annotations

import base64
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from logstream.cli import build_parser
from logstream.config import Settings
from logstream.service.broker import EmbeddedBroker, free_port
from logstream.synth import SyntheticLogs
from service_helpers import RESULT_TIMEOUT_S, model_dir_or_skip

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_FILE = ROOT / "docker-compose.yml"
KUBERNETES_FILE = ROOT / "deploy" / "kubernetes" / "logstream.yaml"
LOGSTREAM_SERVICES = ("worker", "worker-gpu", "tailer", "producer", "alerts")  # those that use Kafka
OPERATIONS = ("prometheus", "alertmanager", "grafana", "webhook-receiver")
KRAFT_SETTINGS = ("KAFKA_NODE_ID", "KAFKA_PROCESS_ROLES", "KAFKA_LISTENERS", "KAFKA_ADVERTISED_LISTENERS",
                  "KAFKA_CONTROLLER_QUORUM_VOTERS", "KAFKA_CONTROLLER_LISTENER_NAMES",
                  "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP", "KAFKA_INTER_BROKER_LISTENER_NAME", "CLUSTER_ID")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE_FILE.read_text())


def is_setting(name: str) -> bool:
    """Whether a LOGSTREAM_ variable names a setting (LOGSTREAM_<SECTION>__<FIELD>) or the config file."""
    if name == "LOGSTREAM_CONFIG":
        return True
    if not name.startswith("LOGSTREAM_"):
        return False
    model: type[BaseModel] | None = Settings
    for part in name[len("LOGSTREAM_"):].lower().split("__"):
        if model is None or part not in model.model_fields:
            return False
        annotation = model.model_fields[part].annotation
        model = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    return model is None  # a leaf, not a whole section


def host_path(service: dict, container_path: str) -> Path:
    """The repository file that a service's volume mounts at ``container_path``."""
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        if target == container_path:
            return (COMPOSE_FILE.parent / source).resolve()
    raise AssertionError(f"nothing is mounted at {container_path}")


def settings_from(env: dict[str, str], monkeypatch) -> Settings:
    for name in [n for n in os.environ if n.startswith("LOGSTREAM_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, str(value))
    return Settings()


# --- structure ----------------------------------------------------------------------------------

def test_compose_has_kafka_worker_producer_and_alerts(compose):
    services = compose["services"]
    assert set(services) >= {"kafka", *LOGSTREAM_SERVICES}
    kafka = services["kafka"]
    assert kafka["image"].startswith("apache/kafka:")
    env = {k: str(v) for k, v in kafka["environment"].items()}
    assert set(KRAFT_SETTINGS) <= set(env)
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    assert len(base64.urlsafe_b64decode(env["CLUSTER_ID"] + "==")) == 16  # a KRaft cluster id is a UUID
    assert env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] == "1"
    assert env["KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"] == "1"
    controller = env["KAFKA_CONTROLLER_LISTENER_NAMES"]
    assert f"{controller}://" in env["KAFKA_LISTENERS"]
    assert controller in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"]
    internal = env["KAFKA_INTER_BROKER_LISTENER_NAME"]
    advertised = dict(item.split("://") for item in env["KAFKA_ADVERTISED_LISTENERS"].split(","))
    # the health check asks the internal listener, and the logstream services use that same address
    health = " ".join(kafka["healthcheck"]["test"])
    assert "kafka-broker-api-versions.sh" in health and f"--bootstrap-server {advertised[internal]}" in health
    assert "grep" in health  # exit status 0 alone does not prove the broker answered
    for name in LOGSTREAM_SERVICES:
        service = services[name]
        assert service["depends_on"]["kafka"]["condition"] == "service_healthy", name
        assert service["environment"]["LOGSTREAM_KAFKA__BOOTSTRAP_SERVERS"] == advertised[internal], name


@pytest.mark.parametrize("name", LOGSTREAM_SERVICES)
def test_compose_services_run_the_one_cli_with_valid_settings(compose, name, monkeypatch):
    service = compose["services"][name]
    command = service["command"]
    assert command[0] == "logstream"
    build_parser().parse_args(command[1:])  # a valid command line (argparse exits otherwise)
    env = service["environment"]
    assert all(is_setting(var) for var in env), [var for var in env if not is_setting(var)]
    config = host_path(service, env["LOGSTREAM_CONFIG"])
    settings = settings_from({**env, "LOGSTREAM_CONFIG": str(config)}, monkeypatch)
    assert settings.kafka.bootstrap_servers == env["LOGSTREAM_KAFKA__BOOTSTRAP_SERVERS"]
    assert settings.metrics.port is not None
    if name == "worker":
        assert f"{settings.metrics.port}:{settings.metrics.port}" in service["ports"]


def mounted_files(service: dict) -> list[tuple[Path, str]]:
    """(repository path, container path) of each of a service's bind mounts from the repository."""
    mounts = []
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        if source.startswith("./"):
            mounts.append(((COMPOSE_FILE.parent / source).resolve(), target))
    return mounts


def test_compose_operations_stack_is_wired_to_the_services_it_watches(compose, monkeypatch):
    services = compose["services"]
    assert set(services) >= set(OPERATIONS)
    for name in OPERATIONS:
        for source, target in mounted_files(services[name]):
            assert source.exists(), f"{name} mounts {source}, which is missing"
    env = services["worker"]["environment"]
    settings = settings_from({**env, "LOGSTREAM_CONFIG": str(host_path(services["worker"], env["LOGSTREAM_CONFIG"]))},
                             monkeypatch)
    tailer_env = services["tailer"]["environment"]
    tailer_settings = settings_from({**tailer_env, "LOGSTREAM_CONFIG": str(
        host_path(services["tailer"], tailer_env["LOGSTREAM_CONFIG"]))}, monkeypatch)
    # Prometheus scrapes the worker and the tailer where they serve, with the rules, and alerts Alertmanager
    prometheus_config = yaml.safe_load(host_path(services["prometheus"], "/etc/prometheus/prometheus.yml").read_text())
    targets = {job["job_name"]: job["static_configs"][0]["targets"] for job in prometheus_config["scrape_configs"]}
    assert targets["logstream-worker"] == [f"worker:{settings.metrics.port}"]
    assert targets["logstream-tailer"] == [f"tailer:{tailer_settings.tail.metrics_port}"]
    for rule_file in prometheus_config["rule_files"]:
        host_path(services["prometheus"], f"/etc/prometheus/{rule_file}")
    am_port = services["alertmanager"]["ports"][0].split(":")[1]
    assert prometheus_config["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"] == [f"alertmanager:{am_port}"]
    assert settings.alerts.alertmanager_url == f"http://alertmanager:{am_port}"
    # Alertmanager and the worker's webhook reach the receiver where it listens
    receiver = services["webhook-receiver"]["command"]
    receiver_port = receiver[receiver.index("--port") + 1]
    am_config = yaml.safe_load(host_path(services["alertmanager"], "/etc/alertmanager/alertmanager.yml").read_text())
    am_urls = [hook["url"] for r in am_config["receivers"] for hook in r.get("webhook_configs", [])]
    assert am_urls == [f"http://webhook-receiver:{receiver_port}/alertmanager"]
    assert [hook.url for hook in settings.alerts.webhooks] == [f"http://webhook-receiver:{receiver_port}/logstream"]
    assert all(hook.secret for hook in settings.alerts.webhooks)
    # Grafana: the datasource is Prometheus, the dashboards folder is where the provider reads
    grafana = services["grafana"]
    mounts = {target: source for source, target in mounted_files(grafana)}
    datasources = yaml.safe_load((mounts["/etc/grafana/provisioning"] / "datasources" / "prometheus.yml").read_text())
    prom_port = services["prometheus"]["ports"][0].split(":")[1]
    assert datasources["datasources"][0]["url"] == f"http://prometheus:{prom_port}"
    provider = yaml.safe_load((mounts["/etc/grafana/provisioning"] / "dashboards" / "logstream.yml").read_text())
    assert provider["providers"][0]["options"]["path"] in mounts
    # the worker is healthy when ready; the GPU variant asks for a GPU and is off unless its profile is on
    health = " ".join(services["worker"]["healthcheck"]["test"])
    assert f"127.0.0.1:{settings.metrics.port}/readyz" in health
    gpu = services["worker-gpu"]
    assert gpu["profiles"] == ["gpu"] and gpu["environment"]["LOGSTREAM_MODEL__DEVICE"] == "cuda"
    assert gpu["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] == ["gpu"]


def container_env(container: dict, secret: dict) -> dict[str, str]:
    """A container's environment, values taken from the Secret where it refers to one."""
    env = {}
    for entry in container["env"]:
        if "value" in entry:
            env[entry["name"]] = entry["value"]
        else:
            ref = entry["valueFrom"]["secretKeyRef"]
            assert ref["name"] == secret["metadata"]["name"], entry
            env[entry["name"]] = secret["stringData"][ref["key"]]
    return env


def test_kubernetes_manifest_runs_the_worker_and_tailer_with_valid_settings(tmp_path, monkeypatch):
    manifest = yaml.safe_load_all(KUBERNETES_FILE.read_text())
    documents = {(d["kind"], d["metadata"]["name"]): d for d in manifest}
    config_map = documents[("ConfigMap", "logstream-config")]
    secret = documents[("Secret", "logstream-secrets")]
    config = tmp_path / "logstream.yaml"
    worker = documents[("Deployment", "logstream-worker")]
    tailer = documents[("DaemonSet", "logstream-tailer")]
    for workload in (worker, tailer):
        pod = workload["spec"]["template"]["spec"]
        container = pod["containers"][0]
        assert container["command"][0] == "logstream"
        build_parser().parse_args(container["command"][1:])
        assert container["imagePullPolicy"] == "IfNotPresent"  # a locally built image is used
        env = container_env(container, secret)
        assert all(is_setting(var) for var in env), [var for var in env if not is_setting(var)]
        mount = next(m for m in container["volumeMounts"] if env["LOGSTREAM_CONFIG"].startswith(m["mountPath"]))
        assert mount["name"] in {v["name"] for v in pod["volumes"]}
        config.write_text(config_map["data"][Path(env["LOGSTREAM_CONFIG"]).name])
        settings = settings_from({**env, "LOGSTREAM_CONFIG": str(config)}, monkeypatch)
        assert settings.metrics.host == "0.0.0.0"  # reached from outside the pod
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        served = settings.metrics.port if workload is worker else settings.tail.metrics_port
        assert ports["metrics"] == served
        assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
        annotations = workload["spec"]["template"]["metadata"]["annotations"]
        assert annotations["prometheus.io/port"] == str(served)
    container = worker["spec"]["template"]["spec"]["containers"][0]
    settings = settings_from({**container_env(container, secret), "LOGSTREAM_CONFIG": str(config)}, monkeypatch)
    resources = container["resources"]
    # one torch thread per CPU, and the CPU they were sized for guaranteed (requests = limits)
    assert resources["requests"]["cpu"] == resources["limits"]["cpu"] == str(settings.model.threads)
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert settings.worker.data_dir is not None and any(
        str(settings.worker.data_dir).startswith(m["mountPath"]) for m in container["volumeMounts"]
        if not m.get("readOnly"))
    assert worker["spec"]["replicas"] <= settings.kafka.partitions  # more would sit idle
    budget = documents[("PodDisruptionBudget", "logstream-worker")]
    assert budget["spec"]["selector"]["matchLabels"] == worker["spec"]["selector"]["matchLabels"]
    kafka = documents[("StatefulSet", "kafka")]["spec"]["template"]["spec"]["containers"][0]
    assert set(KRAFT_SETTINGS) <= {e["name"] for e in kafka["env"]}
    assert documents[("Service", "kafka")]["spec"]["clusterIP"] == "None"


# --- the compose commands, run as processes -----------------------------------------------------

class Output:
    """Collects a process's output lines in a thread (so nothing blocks on a full pipe)."""

    def __init__(self, process: subprocess.Popen):
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process) -> None:
        for line in process.stdout:
            self.lines.append(line)

    @property
    def text(self) -> str:
        return "".join(self.lines)


def on_this_machine(text: str, addresses: dict[str, str]) -> str:
    """A compose address (service:port) as the process standing in for that service listens here."""
    for compose_address, local in addresses.items():
        text = text.replace(compose_address, local)
    return text


def start_service(service: dict, broker: EmbeddedBroker, workdir: Path, extra_env: dict[str, str],
                  addresses: dict[str, str] | None = None, args: list[str] | None = None) -> subprocess.Popen:
    addresses = addresses or {}
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOGSTREAM_")}
    for name, value in service["environment"].items():
        env[name] = on_this_machine(str(value), addresses)
    env["LOGSTREAM_CONFIG"] = str(host_path(service, env["LOGSTREAM_CONFIG"]))
    env["LOGSTREAM_KAFKA__BOOTSTRAP_SERVERS"] = broker.bootstrap_servers  # for kafka:9092
    env.update(extra_env)
    # container paths under /tmp become the test's own directory; `logstream` is this Python's CLI
    args = args or [str(workdir / a[len("/tmp/"):]) if a.startswith("/tmp/") else a for a in service["command"][1:]]
    return subprocess.Popen([sys.executable, "-m", "logstream.cli", *args], env=env, cwd=workdir,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, preexec_fn=_default_interrupt)


def _default_interrupt() -> None:
    """Ctrl-C as a container's (or a terminal's) process gets it: a test run started in the background of
    a non-interactive shell passes SIGINT on ignored, and the producer's Ctrl-C would then never arrive."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_until(condition, what: str, processes: dict[str, tuple[subprocess.Popen, Output]],
               timeout_s: float = RESULT_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        for name, (process, output) in processes.items():
            if process.poll() is not None:
                pytest.fail(f"{name} exited with {process.returncode} before {what}:\n{output.text[-3000:]}")
        if time.monotonic() > deadline:
            logs = "\n".join(f"--- {n}:\n{o.text[-2000:]}" for n, (_, o) in processes.items())
            pytest.fail(f"timed out after {timeout_s:g} s waiting for {what}\n{logs}")
        time.sleep(0.2)


def stop(process: subprocess.Popen, sig: int = signal.SIGTERM, timeout_s: float = 60) -> int:
    if process.poll() is None:
        os.killpg(process.pid, sig)
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return process.returncode


def start_alertmanager(compose: dict, workdir: Path, addresses: dict[str, str]) -> subprocess.Popen:
    """The real Alertmanager on the compose file's own config (its receiver's address made local)."""
    binary = shutil.which("prometheus-alertmanager")
    if binary is None:
        pytest.skip("prometheus-alertmanager is not installed (Debian package; scripts/setup installs it)")
    service = compose["services"]["alertmanager"]
    config = workdir / "alertmanager.yml"
    config.write_text(on_this_machine(host_path(service, "/etc/alertmanager/alertmanager.yml").read_text(), addresses))
    listen = addresses["alertmanager:9093"]
    return subprocess.Popen([binary, f"--config.file={config}", f"--storage.path={workdir / 'am-data'}",
                             f"--web.listen-address={listen}", "--cluster.listen-address="],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


@pytest.mark.slow
def test_compose_commands_make_alerts_flow(compose, tmp_path):
    """worker -> alerts topic -> follower; worker -> signed webhook -> receiver (verified); worker ->
    Alertmanager (the shipped config) -> receiver."""
    model_dir_or_skip()
    services = compose["services"]
    receiver_port, am_port = free_port(), free_port()
    addresses = {"webhook-receiver:8080": f"127.0.0.1:{receiver_port}", "alertmanager:9093": f"127.0.0.1:{am_port}"}
    test_env = {
        "LOGSTREAM_SCORING__THRESHOLD": "-1",  # every line is over it: alerts are certain
        "LOGSTREAM_METRICS__PORT": str(free_port()),
        "LOGSTREAM_WORKER__SESSION_TIMEOUT_S": "6",
        "LOGSTREAM_WORKER__DATA_DIR": str(tmp_path / "faust"),
    }
    processes: dict[str, tuple[subprocess.Popen, Output]] = {}
    with EmbeddedBroker() as broker:
        try:
            receiver_args = [a if a != "8080" else str(receiver_port) for a in
                             services["webhook-receiver"]["command"][1:]]
            receiver = start_service(services["webhook-receiver"], broker, tmp_path, {}, addresses, receiver_args)
            processes["webhook-receiver"] = (receiver, Output(receiver))
            am = start_alertmanager(compose, tmp_path, addresses)
            processes["alertmanager"] = (am, Output(am))
            for name in ("worker", "alerts"):
                process = start_service(services[name], broker, tmp_path, test_env, addresses)
                processes[name] = (process, Output(process))
            alerts = processes["alerts"][1]
            wait_until(lambda: "following" in alerts.text, "the alerts follower to start", processes)
            producer = start_service(services["producer"], broker, tmp_path, test_env)
            processes["producer"] = (producer, Output(producer))
            streams = SyntheticLogs().streams
            wait_until(lambda: any(line.startswith("! ") and any(f"  {s}  " in line for s in streams)
                                   for line in alerts.lines), "an alert printed by the follower", processes)
            assert "score" in alerts.text and " > -1.00" in alerts.text
            received = processes["webhook-receiver"][1]
            wait_until(lambda: "logstream alert verified" in received.text, "a signed webhook, verified", processes)
            # Alertmanager's route waits group_wait (10 s) before its first notification
            wait_until(lambda: "alertmanager firing LogAnomaly" in received.text,
                       "Alertmanager to pass an anomaly on to the receiver", processes)
            assert "REJECTED" not in received.text and "UNSIGNED" not in received.text
            producer_code = stop(producer, signal.SIGINT)
            assert producer_code in (0, 130), processes["producer"][1].text[-2000:]
            assert stop(processes["alerts"][0]) == 0, alerts.text[-2000:]
            assert stop(processes["worker"][0]) == 0, processes["worker"][1].text[-3000:]
            assert stop(receiver) == 0, received.text[-2000:]
        finally:
            for process, _ in processes.values():
                stop(process, signal.SIGKILL, timeout_s=10)


def test_commands_without_a_configured_broker_use_the_embedded_brokers_address(tmp_path):
    """No kafka.bootstrap_servers: the worker, tailer, alerts and feedback commands use 127.0.0.1:9092,
    where `logstream broker` listens, and say so."""
    import socket

    from logstream.commands import EMBEDDED_BROKER

    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", 9092)) == 0:
            pytest.skip("something already listens on 127.0.0.1:9092")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOGSTREAM_")}
    log = tmp_path / "app.log"
    log.write_text("Dec 10 06:55:46 LabSZ sshd[24200]: Invalid user webmaster from 1.2.3.4\n")
    with EmbeddedBroker(port=9092):
        tail = subprocess.run([sys.executable, "-m", "logstream.cli", "tail", "--once", "--checkpoint",
                               str(tmp_path / "cp.json"), str(log)], env=env, capture_output=True, text=True,
                              timeout=120)
    assert tail.returncode == 0, tail.stderr
    assert f"using {EMBEDDED_BROKER}, where `logstream broker` listens" in tail.stderr
