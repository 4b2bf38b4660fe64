"""kafkatx: forensic toolkit for Apache Kafka transaction logs."""

__version__ = "0.1.0"

SUPPORTED_KAFKA = (
    "log dirs of Apache Kafka 0.8 to 4.4: message formats v0, v1 and v2, transactions (0.11+) "
    "v1 and v2 (KIP-890, Kafka 4.0+); serve speaks Kafka 3.0 to 4.0's protocol ranges"
)
