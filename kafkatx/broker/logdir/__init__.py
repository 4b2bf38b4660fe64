"""The log dir: every topic's partition logs as the metadata image has them, checkpoints,
retention and the log cleaner (Kafka's ``LogManager``, ``LogCleaner``), and ``serve --from``'s
copy of a captured log dir."""
