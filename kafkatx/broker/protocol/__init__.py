"""The Kafka protocol server: connections, dispatch, the request handlers (one module per API
group), the admin logic they need and the process lifecycle (Kafka's ``SocketServer``,
``KafkaApis``)."""
