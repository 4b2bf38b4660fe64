"""One partition's log on disk: segments and their indexes, appends, reads, the leader epoch
cache, the producer state it replays, swaps and down-conversion (Kafka's ``UnifiedLog``,
``LogSegment``)."""
