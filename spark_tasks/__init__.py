"""PySpark jobs over the rebalance history: thin entry points over pure DataFrame transforms.

``python -m spark_tasks <job> ...`` runs a job (``spark_tasks.__main__`` lists them); the same
file works as a ``spark-submit`` application. The history's contract is ``spark_tasks.schema``;
``spark_tasks.history`` reads it into Spark and refuses bad input before Spark starts working.
"""
