"""The streaming service: Kafka topics, the Faust worker, alert sinks, the tailer, metrics."""
