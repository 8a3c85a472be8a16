"""Large message contents stored once per results directory, by content hash (`events/blobs/`).

The same task instance's tool outputs and statements recur in the log of every strategy and window run on it;
a log refers to each large text by its SHA-256 instead of holding it (measured on the default suite: 88% of a
log's bytes are such texts, 6 copies of each on average). Blobs are gzip files, `blobs/<first two hex>/<hash>.gz`,
so `zcat` shows one; a blob is written whole under a temporary name, flushed to disk and renamed, before the
log that refers to it is closed, so a run's row never points at a blob a crash could lose. Writers in several
processes may store the same text at once: each writes its own temporary file and the rename is atomic.
"""
from __future__ import annotations

import hashlib
import os
import threading
import zlib
from pathlib import Path

BLOBS_DIR = "blobs"
# Ours: texts at least this long are stored as blobs. Measured on the default suite (2 cores, ext4): 2,048
# chars gives the smallest directory (a blob file takes a 4 kB block on disk, so shorter texts cost more
# stored apart than inline in the compressed log).
BLOB_MIN_CHARS = 2048
# Ours: zlib's default level. Level 1 writes the default suite's logs 15% larger for ~0.3% less run time.
COMPRESS_LEVEL = 6
GZIP_WBITS = 31  # zlib's window bits for a gzip header and trailer (a file `gzip -d` and Python's gzip read)


def blob_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def is_blob_hash(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


class BlobStore:
    """The blobs of one events/ directory, written and read."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self._known: set[str] = set()  # hashes this process has seen stored: no stat per reference
        self._lock = threading.Lock()

    def path(self, digest: str) -> Path:
        return self.directory / digest[:2] / f"{digest}.gz"

    def put(self, text: str) -> str | None:
        """Store `text` (once) and return its hash; None for a text UTF-8 cannot hold (a lone surrogate a model's
        JSON came with), which stays in the log."""
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            return None
        digest = blob_hash(data)
        if digest in self._known:
            return digest
        target = self.path(digest)
        if not target.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            temp = target.with_name(f"{digest}.{os.getpid()}-{threading.get_ident()}.tmp")
            compressor = zlib.compressobj(COMPRESS_LEVEL, zlib.DEFLATED, GZIP_WBITS)
            with open(temp, "wb") as handle:
                handle.write(compressor.compress(data) + compressor.flush())
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, target)
        with self._lock:
            self._known.add(digest)
        return digest

    def get(self, digest: str) -> str:
        """The text stored under `digest`; OSError when its blob is missing, ValueError when it is damaged."""
        try:
            data = zlib.decompress(self.path(digest).read_bytes(), GZIP_WBITS)
        except zlib.error as exc:
            raise ValueError(f"blob {digest} is damaged ({exc})") from exc
        if blob_hash(data) != digest:
            raise ValueError(f"blob {digest} does not hold the text of its hash")
        return data.decode("utf-8")
