"""kafkatx: forensic toolkit for Apache Kafka transaction logs."""

__version__ = "0.1.0"
