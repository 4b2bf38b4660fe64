"""Which engine runs: ``auto`` resolved, and the chosen engine opened.

Above both engines (they import :mod:`kafkatx.engines.base`, never this module), so the engine
protocol knows nothing of Spark.
"""

from __future__ import annotations

import importlib.util
import os

from kafkatx.engines.base import (
    AUTO,
    ENGINE_NAMES,
    LOCAL,
    SPARK,
    SPARK_INSTALL_HINT,
    Engine,
    EngineConfig,
    EngineUnavailableError,
)

# ``auto`` goes to Spark locally from this many bytes of segments on this many cores (measured
# on 2 cores, Spark never beat the local engine; with many cores it pays off from a few GB).
AUTO_SPARK_BYTES = 8 * 1024**3
AUTO_SPARK_CORES = 16


def spark_available() -> bool:
    return importlib.util.find_spec("pyspark") is not None


def resolve_engine_name(config: EngineConfig, input_bytes: int = 0,
                        cores: int | None = None) -> str:
    """``auto``: Spark when a master is given, or when the input is large and this machine
    has the cores to gain from it (and pyspark is installed); else local."""
    if config.name != AUTO:
        return config.name
    if cores is None:
        cores = os.cpu_count() or 1
    big = input_bytes >= AUTO_SPARK_BYTES and cores >= AUTO_SPARK_CORES
    wants_spark = config.master is not None or big
    return SPARK if wants_spark and spark_available() else LOCAL


def open_engine(config: EngineConfig | None = None, *, input_bytes: int = 0) -> Engine:
    """The engine ``config`` names (``auto`` resolved against ``input_bytes``)."""
    config = EngineConfig() if config is None else config
    name = resolve_engine_name(config, input_bytes)
    if name == LOCAL:
        from kafkatx.engines.local import LocalEngine

        return LocalEngine()
    if name == SPARK:
        if not spark_available():
            raise EngineUnavailableError(
                f"--engine spark needs pyspark, which is not installed: {SPARK_INSTALL_HINT}")
        from kafkatx.engines.spark import SparkEngine

        return SparkEngine(config=config)
    raise EngineUnavailableError(f"unknown engine {name!r}; choose one of "
                                 f"{', '.join(ENGINE_NAMES)}")
