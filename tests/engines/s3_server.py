"""A real S3 endpoint on 127.0.0.1 for the URI tests: moto's server, one bucket, and log dirs
uploaded into it with pyarrow's S3 client.

Paths are given as a user with a private S3-compatible store (MinIO, Ceph...) would: either the
endpoint in the URI's query (``s3://bucket/key?endpoint_override=127.0.0.1:PORT&scheme=http``,
which travels with the paths to Spark's executors) or in the environment (``env()``: what a
user exports for the driver and ``spark.executorEnv.*`` for the executors).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pyarrow import fs

ACCESS_KEY = "kafkatx-test"  # moto accepts any credentials
SECRET_KEY = "kafkatx-test-secret"


@dataclass(frozen=True)
class S3Endpoint:
    host: str
    port: int
    bucket: str

    @property
    def query(self) -> str:
        return f"endpoint_override={self.host}:{self.port}&scheme=http"

    def uri(self, key: str, *, query: bool = True) -> str:
        """``s3://bucket/key``, with the endpoint in the query unless ``query=False``."""
        return f"s3://{self.bucket}/{key}" + (f"?{self.query}" if query else "")

    def env(self) -> dict[str, str]:
        """The endpoint and credentials as environment variables (read by pyarrow's S3)."""
        return {"AWS_ENDPOINT_URL": f"http://{self.host}:{self.port}",
                "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}

    def client(self) -> fs.S3FileSystem:
        return fs.S3FileSystem(access_key=ACCESS_KEY, secret_key=SECRET_KEY,
                               endpoint_override=f"{self.host}:{self.port}", scheme="http",
                               region="us-east-1", allow_bucket_creation=True)

    def upload(self, local: Path, key: str) -> str:
        """Copy the tree ``local`` to ``bucket/key``; returns its URI (endpoint in the query)."""
        fs.copy_files(str(local), f"{self.bucket}/{key}",
                      source_filesystem=fs.LocalFileSystem(), destination_filesystem=self.client())
        return self.uri(key)

    def objects(self) -> dict[str, int]:
        """Every object in the bucket: key -> size."""
        infos = self.client().get_file_info(fs.FileSelector(self.bucket, recursive=True))
        return {i.path: i.size for i in infos if i.type == fs.FileType.File}


@contextmanager
def s3_endpoint() -> Iterator[S3Endpoint]:
    """moto's S3 server on a free port of 127.0.0.1 with a new, empty bucket."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request on stderr
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = S3Endpoint(host=host, port=port, bucket=f"evidence-{uuid.uuid4().hex[:8]}")
        endpoint.client().create_dir(endpoint.bucket)
        yield endpoint
    finally:
        server.stop()
