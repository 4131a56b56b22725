"""Kafka security settings: every aiokafka client and the Faust worker get the same protocol, SASL
mechanism, user and TLS context from ``kafka.*``, and secrets never show in errors or reprs."""

from __future__ import annotations

import ssl

import pytest
from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth
from pydantic import ValidationError

from logstream.config import KafkaSettings, Settings
from logstream.service.worker import build_app, faust_credentials

PASSWORD = "s3cret-not-to-be-printed"


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_aiokafka_clients_and_faust_get_the_same_sasl_options(protocol, mechanism):
    kafka = KafkaSettings(bootstrap_servers="broker:9093", security_protocol=protocol, sasl_mechanism=mechanism,
                          sasl_username="logstream", sasl_password=PASSWORD)
    ours = kafka.client_options()
    faust_side = credentials_to_aiokafka_auth(faust_credentials(kafka))
    assert ours["bootstrap_servers"] == "broker:9093"
    for key in ("security_protocol", "sasl_mechanism", "sasl_plain_username", "sasl_plain_password"):
        assert ours[key] == faust_side[key], key
    assert (ours["security_protocol"], ours["sasl_mechanism"], ours["sasl_plain_password"]) == (
        protocol, mechanism, PASSWORD)
    tls = protocol == "SASL_SSL"
    assert isinstance(ours.get("ssl_context"), ssl.SSLContext) == tls
    assert isinstance(faust_side.get("ssl_context"), ssl.SSLContext) == tls


def test_tls_alone_and_plaintext():
    tls = KafkaSettings(bootstrap_servers="broker:9093", security_protocol="SSL")
    options = tls.client_options()
    assert options["security_protocol"] == "SSL" and isinstance(options["ssl_context"], ssl.SSLContext)
    assert options["ssl_context"].verify_mode == ssl.CERT_REQUIRED  # brokers' certificates are checked
    assert credentials_to_aiokafka_auth(faust_credentials(tls))["security_protocol"] == "SSL"
    plain = KafkaSettings(bootstrap_servers="broker:9092")
    assert plain.client_options() == {"bootstrap_servers": "broker:9092", "security_protocol": "PLAINTEXT"}
    assert faust_credentials(plain) is None


def test_the_worker_app_carries_the_credentials(tmp_path):
    settings = Settings(kafka={"bootstrap_servers": "broker:9093", "security_protocol": "SASL_PLAINTEXT",
                               "sasl_mechanism": "SCRAM-SHA-256", "sasl_username": "logstream",
                               "sasl_password": PASSWORD},
                        worker={"data_dir": tmp_path}, metrics={"port": None}, adapt={"enabled": False})
    app = build_app(settings, model=object())  # the model is not used to build the app
    auth = credentials_to_aiokafka_auth(app.conf.broker_credentials)
    assert auth["sasl_mechanism"] == "SCRAM-SHA-256" and auth["sasl_plain_password"] == PASSWORD


def test_incomplete_security_settings_say_what_is_missing_and_never_print_the_password(monkeypatch):
    with pytest.raises(ValidationError) as missing_user:
        Settings(kafka={"security_protocol": "SASL_SSL", "sasl_password": PASSWORD})
    assert "kafka.sasl_username" in str(missing_user.value) and PASSWORD not in str(missing_user.value)
    with pytest.raises(ValidationError) as half_tls:
        KafkaSettings(security_protocol="SSL", ssl_certfile="/etc/client.crt")
    assert "ssl_keyfile" in str(half_tls.value)
    with pytest.raises(ValueError, match="ssl_cafile: /nonexistent/ca.pem is not a readable file"):
        KafkaSettings(security_protocol="SSL", ssl_cafile="/nonexistent/ca.pem").client_options()
    # a misspelled key beside a secret, from the environment: the error names the key, not the secret
    monkeypatch.setenv("LOGSTREAM_ALERTS__WEBHOOKS", '[{"url": "http://hooks", "secrett": "whsec_c2VjcmV0LWtleQ=="}]')
    with pytest.raises(ValidationError) as misspelled:
        Settings()
    assert "secrett" in str(misspelled.value) and "whsec_c2VjcmV0LWtleQ" not in str(misspelled.value)
    monkeypatch.delenv("LOGSTREAM_ALERTS__WEBHOOKS")
    settings = Settings(kafka={"security_protocol": "SASL_PLAINTEXT", "sasl_username": "u", "sasl_password": PASSWORD})
    assert PASSWORD not in repr(settings) and PASSWORD not in settings.model_dump_json()

