"""How clients outside this process reach the coordinator runtime, one package per wire:
``websocket`` (the JSON consumer protocol of docs/protocol.md) and ``kafka`` (Kafka's own wire
protocol, docs/kafka.md). Each decodes a client's
frames into the engine's request dataclasses, submits them to the runtime and sends the replies
back; none holds group state of its own."""
