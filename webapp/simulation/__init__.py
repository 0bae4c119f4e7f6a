"""Simulated consumers that really consume: the consumer client driven in-process, fetching
from the topic registry (seed 002's Fetcher), committing, and showing lag; the demo `make run`
starts; and ``client_driver``, which runs the engine's sans-IO consumer client on asyncio over
the in-process transport or the websocket one (``manage.py consume``). ``history`` is the same
simulation in virtual time, without Django: a synthetic rebalance history of any size
(``manage.py generate_history``)."""
