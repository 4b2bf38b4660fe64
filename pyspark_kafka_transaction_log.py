"""The ``kafka_transaction_log`` data source, found by Spark without ``register(spark)``.

Spark (4.0+) imports every top-level module named ``pyspark_*`` that defines ``DefaultSource``
and registers it under ``DefaultSource.name()`` (``pyspark.sql.worker.lookup_data_sources``):
one source per module. See :mod:`kafkatx.engines.spark_sources`.
"""

from kafkatx.engines.spark_sources import KafkaTransactionLogDataSource as DefaultSource

__all__ = ["DefaultSource"]
