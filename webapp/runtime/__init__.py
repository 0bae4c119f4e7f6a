"""The engine's host in a serving process: the coordinator runtime and its collaborators (its
clock and timer, fault recovery, group commit, presence, the topic service), fair loop turns
for bursts of requests, and where the engine's events go (numbered, stored in the history
table, published to Channels groups). docs/operations.md, "Inside the runtime", lists the
modules.

Imports flow one way: nothing here imports ``webapp.transports``, ``webapp.dashboard`` or
``webapp.simulation``; transports and the simulation reach the engine through
:class:`~webapp.runtime.api.RuntimeAPI`, which
:class:`~webapp.runtime.coordinator_runtime.CoordinatorRuntime` implements.
"""
