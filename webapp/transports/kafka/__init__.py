"""Kafka's own wire protocol: real Kafka consumers (librdkafka, kafka-python, aiokafka) join the
engine's groups. ``codec`` frames and decodes requests with kio's schemas, ``apis`` turns each
API into the engine's requests and back, ``listener`` serves the TCP connections on the
runtime's event loop."""
