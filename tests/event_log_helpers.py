"""The bytes of an event log as its lines hold them (decompressed for a `.jsonl.gz` log), for tests that tamper
with a log's lines the way a torn copy, an editor or a hostile file would."""
from __future__ import annotations

import gzip
from pathlib import Path


def stored_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data


def stored_lines(path: Path) -> list[str]:
    return stored_bytes(path).decode("utf-8").splitlines()


def write_stored(path: Path, data: bytes | str) -> None:
    """Replace the log's lines by `data`, compressed as the log's name says."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    path.write_bytes(gzip.compress(raw, mtime=0) if path.name.endswith(".gz") else raw)
