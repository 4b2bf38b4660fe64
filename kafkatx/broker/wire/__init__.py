"""The Kafka wire format of requests and responses (kio entities, v0/v1 message sets), with no
broker state."""
