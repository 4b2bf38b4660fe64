"""Replication of a ``--brokers N`` serve: the controller's partition states and elections
(``Cluster``), each broker's replicas, ISR and high watermark (``ReplicaManager``) and its
followers' fetching (``ReplicaFetcherThread``)."""
