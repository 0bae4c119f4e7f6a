"""The engine's host in a serving process: the coordinator runtime (its clock, its one timer,
replies released after the records are durable), fair loop turns for bursts of requests, the
topic registry, and where the engine's events go (numbered, stored in the history table,
published to Channels groups).

Imports flow one way: nothing here imports ``webapp.transports``, ``webapp.dashboard`` or
``webapp.simulation``; they all reach the engine through
:class:`~webapp.runtime.coordinator_runtime.CoordinatorRuntime`.
"""
