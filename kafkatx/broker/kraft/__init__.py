"""KRaft metadata: the ``__cluster_metadata-0`` log (snapshots, quorum state), the records the
controller writes to it and the producer id blocks it hands out."""
