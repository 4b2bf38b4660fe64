"""The group and transaction coordinators and the records they keep in ``__consumer_offsets``
and ``__transaction_state`` (Kafka's ``GroupCoordinator``, ``TransactionCoordinator``)."""
