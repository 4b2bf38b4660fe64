"""Apache Kafka's jars from Maven Central, resolved into a cache outside the repository.

The versions the tests judge kafkatx with are pinned here, once: the newest 4.x and the newest
4.0.x. ``python tests/realkafka/dist.py`` (run by ``.ci/deps``) resolves them with Maven; the
pytest fixtures resolve on demand the same way. Nothing resolved is ever committed: the cache is
``$KAFKATX_KAFKA_CACHE``, else ``$XDG_CACHE_HOME/kafkatx``, else ``~/.cache/kafkatx``.

Standard library only: ``.ci/deps`` runs it before any virtual environment exists.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: The Kafka versions every real-Kafka test runs on: the newest 4.x, and the newest 4.0.x
#: (the first release with transactions v2 and without ZooKeeper).
KAFKA_VERSIONS = ("4.4.0", "4.0.2")
NEWEST = KAFKA_VERSIONS[0]

POM = Path(__file__).with_name("pom.xml")
JAVA_SOURCES = Path(__file__).with_name("java")
COMPLETE = ".complete"


class KafkaUnavailable(RuntimeError):
    """Kafka cannot run here; the message is the one line a user needs."""


def cache_root() -> Path:
    explicit = os.environ.get("KAFKATX_KAFKA_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kafkatx"


def libs_dir(version: str) -> Path:
    return cache_root() / f"kafka-{version}" / "libs"


def java_binary() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise KafkaUnavailable("the real-Kafka tests need Java 17+ (java on PATH or JAVA_HOME)")
    return found


def javac_binary() -> str:
    java = Path(java_binary()).resolve()
    javac = java.with_name("javac")
    if javac.exists():
        return str(javac)
    found = shutil.which("javac")
    if found is None:
        raise KafkaUnavailable("the real-Kafka tests compile a small Java driver: they need a "
                               "JDK 17+ (javac), not only a JRE")
    return found


def resolve(version: str) -> Path:
    """The directory holding Kafka ``version``'s jars with their dependencies (resolved once)."""
    libs = libs_dir(version)
    if (libs / COMPLETE).exists():
        return libs
    java_binary()
    with _lock(libs.parent, "libs.lock"):
        if not (libs / COMPLETE).exists():
            _resolve_into(version, libs)
    return libs


@contextmanager
def _lock(folder: Path, name: str) -> Iterator[None]:
    """One process at a time (pytest-xdist workers may all ask at once; the others wait)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / name, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _resolve_into(version: str, libs: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise KafkaUnavailable(
            f"the real-Kafka tests need Apache Kafka {version} from Maven Central: install Maven "
            f"(mvn) and reach Maven Central, or run `python tests/realkafka/dist.py` where you can")
    partial = libs.with_name("libs.partial")
    shutil.rmtree(partial, ignore_errors=True)
    done = subprocess.run(
        [mvn, "-q", "-B", "-f", str(POM), "dependency:copy-dependencies",
         f"-DoutputDirectory={partial}", f"-Dkafka.version={version}"],
        capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["(no output)"]
        raise KafkaUnavailable(f"Maven could not resolve Apache Kafka {version} from Maven "
                               f"Central: {tail[0]}")
    shutil.rmtree(libs, ignore_errors=True)
    partial.rename(libs)
    (libs / COMPLETE).write_text(version + "\n")


def classpath(version: str) -> str:
    return str(resolve(version) / "*")


def driver_classes(version: str) -> Path:
    """The test drivers in ``java/`` compiled against Kafka ``version`` (cached by source hash)."""
    sources = sorted(JAVA_SOURCES.glob("*.java"))
    digest = hashlib.sha256()
    for source in sources:
        digest.update(source.name.encode())
        digest.update(source.read_bytes())
    out = cache_root() / f"kafka-{version}" / f"drivers-{digest.hexdigest()[:16]}"
    if (out / COMPLETE).exists():
        return out
    with _lock(out.parent, "drivers.lock"):
        if not (out / COMPLETE).exists():
            _compile_drivers(version, sources, out)
    return out


def _compile_drivers(version: str, sources: list[Path], out: Path) -> None:
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    done = subprocess.run(
        [javac_binary(), "-nowarn", "-encoding", "UTF-8", "-cp", classpath(version),
         "-d", str(partial), *map(str, sources)],
        capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"javac failed on tests/realkafka/java against Kafka {version}:\n"
                           f"{done.stdout}{done.stderr}")
    shutil.rmtree(out, ignore_errors=True)
    partial.rename(out)
    (out / COMPLETE).write_text(version + "\n")


def main(argv: list[str]) -> int:
    versions = argv or list(KAFKA_VERSIONS)
    for version in versions:
        try:
            print(f"Apache Kafka {version}: {resolve(version)}")
            print(f"  test drivers: {driver_classes(version)}")
        except KafkaUnavailable as exc:
            print(f"dist.py: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
