"""The websocket consumer protocol (docs/protocol.md) at ``/ws/consumer/``: ``codec`` turns
JSON frames into the engine's requests and its responses into frames (pure), ``connection``
serves one client's socket."""
