"""The analyses' side of the web host: the rebalance history as Parquet, the Spark report runs
and what the analysis page shows.

``export`` writes the stored events (``GroupEvent`` rows) to a day-partitioned Parquet dataset,
incrementally (``manage.py export_history``); ``webapp.simulation.history`` writes a synthetic
history of any size the same way, from the real engine driven in virtual time by simulated
members (``manage.py generate_history``). Both write ``spark_tasks.schema.HISTORY_SCHEMA``,
which the Spark jobs read (docs/analysis.md). ``reports`` runs the Spark report on the exported
history (``spark-submit``, progress, summary into a ``ReportRun``); ``results`` is what the
analysis page reads.
"""
