"""The broker's settings: ``BrokerConfig`` (Kafka's ``KafkaConfig``), the ``ConfigDef``
validation of config values and the dynamic broker configs set by AlterConfigs."""
