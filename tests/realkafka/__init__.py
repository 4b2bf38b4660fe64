"""Apache Kafka itself as the judge: real KRaft nodes, Kafka's tools and Java client in tests."""
