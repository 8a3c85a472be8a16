"""Large message contents stored once, by content hash, in append-only packs beside the logs (`events/blobs/`).

The same task instance's tool outputs and statements recur in the log of every strategy and window run on it; a
log refers to each large text instead of holding it (measured on the default suite: 87% of a log's bytes are
such texts, each in 6.6 logs on average). A reference names the text's SHA-256 and where it lies:
`{"$blob": <sha256>, "pack": <file>, "at": <offset>, "size": <bytes>}`. A pack is a file of gzip members, one per
text (`gzip -d` on a whole pack prints every text), written by one process alone and never rewritten: each
process writing a results directory appends to a pack of its own, so concurrent workers never share a file, and
a text is stored once per process (a text another worker stored already may be stored again by this one).

Crash safety: a text is appended as the run goes and the pack is flushed to disk (`commit`) when the run's log
closes, before the runner appends the run's row; a kill leaves at most a torn tail, which only runs that never
finished refer to. One file and one fsync per process and run, not per text: a new file costs ~0.5 ms on ext4
here, which at one file per text was most of what the layout cost.
"""
from __future__ import annotations

import hashlib
import os
import secrets
import threading
import zlib
from collections import OrderedDict
from pathlib import Path
from typing import Any

from isal import isal_zlib

BLOBS_DIR = "blobs"
BLOB_REF = "$blob"
# Ours: texts at least this long are stored in packs. Measured on the default suite's 160 logs: 1,024 gives the same
# directory, 4,096 one 12% larger (texts of 2-4k characters recur too).
BLOB_MIN_CHARS = 2048
# Written with ISA-L (python-isal): the same gzip format, read by the standard library, at ~480 MB/s where zlib's
# fastest level writes ~95 MB/s (on the default suite's logs here), and a little smaller (ratio 3.95 vs 3.66).
# Ours: ISA-L's level 1; its level 3 gains 0.5% for a third of the speed.
COMPRESS_LEVEL = 1
GZIP_WBITS = 31  # window bits for a gzip header and trailer (a member `gzip -d` and Python's gzip read)
# Ours: the texts a process remembers having stored, per directory (about 200 bytes each): enough for the
# recurrence within a sweep's neighbouring cells, bounded for a process that writes a million runs.
REMEMBERED = 1 << 16


def blob_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def is_reference(value: Any) -> bool:
    """Whether a content is a reference to a stored text (BlobStore.get refuses one that is malformed)."""
    return isinstance(value, dict) and BLOB_REF in value


class _Pack:
    """This process's pack in one blobs/ directory: appended as runs go, flushed and closed at each commit (no
    file stays open between runs)."""

    def __init__(self, directory: Path):
        self.path = directory / f"{os.getpid()}-{secrets.token_hex(6)}.gz"
        self._file: Any = None
        self._size = 0
        self.lock = threading.Lock()
        self.remembered: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def still_there(self) -> bool:
        """Whether what this pack remembers is still on disk (a results directory deleted and made again under
        the same path, as a notebook or a test does, has lost it)."""
        return self._size == 0 or self._file is not None or self.path.is_file()

    def append(self, digest: str, member: bytes) -> dict[str, Any]:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "ab", buffering=0)
        reference = {BLOB_REF: digest, "pack": self.path.name, "at": self._size, "size": len(member)}
        self._file.write(member)
        self._size += len(member)
        return reference

    def commit(self) -> None:
        if self._file is not None:
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None


# (process, directory) -> its pack, the most recent last; a forked worker makes its own. A store keeps its pack
# while it lives; this map only lets the next run of the process find the pack and what it remembers.
_PACKS: OrderedDict[tuple[int, str], _Pack] = OrderedDict()
_PACKS_KEPT = 8
_PACKS_LOCK = threading.Lock()


def _pack(directory: Path) -> _Pack:
    """This process's pack of `directory` (a new one when the one it had is gone from disk)."""
    directory = Path(os.path.abspath(directory))  # the same directory whatever the working directory
    key = (os.getpid(), str(directory))
    with _PACKS_LOCK:
        if key not in _PACKS or not _PACKS[key].still_there():
            _PACKS[key] = _Pack(directory)
            if len(_PACKS) > _PACKS_KEPT:
                _PACKS.popitem(last=False)
        _PACKS.move_to_end(key)
        return _PACKS[key]


class BlobStore:
    """The blobs of one events/ directory: stored through this process's pack, read from any pack."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self._pack: _Pack | None = None

    def put(self, text: str) -> dict[str, Any] | None:
        """Store `text` (once per process) and return its reference; None for a text UTF-8 cannot hold (a lone
        surrogate a model's JSON came with), which stays in the log. Readable once committed."""
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            return None
        digest = blob_hash(data)
        pack = self._pack = self._pack or _pack(self.directory)
        with pack.lock:
            reference = pack.remembered.get(digest)
            if reference is None:
                compressor = isal_zlib.compressobj(COMPRESS_LEVEL, isal_zlib.DEFLATED, GZIP_WBITS)
                reference = pack.append(digest, compressor.compress(data) + compressor.flush())
                pack.remembered[digest] = reference
                if len(pack.remembered) > REMEMBERED:
                    pack.remembered.popitem(last=False)
            else:
                pack.remembered.move_to_end(digest)
        return reference

    def commit(self) -> None:
        """Flush what this store appended to disk."""
        if self._pack is not None:
            with self._pack.lock:
                self._pack.commit()

    def get(self, reference: dict[str, Any]) -> str:
        """The text a reference names; OSError when its pack is missing, ValueError when the bytes there are
        not the text of its hash (a pack cut short, altered or another file)."""
        name, at, size = reference.get("pack"), reference.get("at"), reference.get("size")
        if not (isinstance(name, str) and name and "/" not in name and "\\" not in name and not name.startswith(".")
                and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in (at, size))
                and isinstance(reference[BLOB_REF], str)):
            raise ValueError(f"a malformed reference to a stored text ({str(reference)[:200]}): it needs "
                             f"{BLOB_REF!r} (a SHA-256), 'pack' (a file of {BLOBS_DIR}/), 'at' and 'size' (bytes)")
        with open(self.directory / name, "rb") as handle:
            handle.seek(at)
            member = handle.read(size)
        try:
            data = zlib.decompress(member, GZIP_WBITS)
        except zlib.error as exc:
            raise ValueError(f"blob {reference[BLOB_REF]} in {name} is damaged ({exc})") from exc
        if blob_hash(data) != reference[BLOB_REF]:
            raise ValueError(f"blob {reference[BLOB_REF]}: {name} does not hold the text of its hash there")
        return data.decode("utf-8")
