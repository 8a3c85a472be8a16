"""Reading the files a user hands ctxbench (task files, traces, configs, results directories) with bounds,
each failure a ConfigError naming the file: the one place where such a file is opened and parsed.

The bounds (docs/reliability.md) keep hostile files from crashing or hanging the harness:

* a regular file only: a FIFO would block the open, /dev/zero would never end, a directory is no file;
* JSON and YAML nest at most MAX_DEPTH arrays/objects deep: the json module recurses in C and raises
  RecursionError somewhere near Python's recursion limit (which depends on the stack at the call), and
  everything downstream (secret scrubbing, hashing, validation) walks the data recursively too, so a fixed
  bound well below that limit is checked first, by a linear scan;
* YAML (parsed in pure Python) is at most MAX_YAML_BYTES long, holds at most MAX_YAML_ALIASES aliases and
  expands to at most MAX_YAML_NODES nodes: an alias is a reference, and nine levels of nine aliases (the
  "billion laughs") expand to 9**9 nodes when walked.
"""
from __future__ import annotations

import json
import os
import stat
from array import array
from itertools import accumulate
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from harness.core.errors import ConfigError

MAX_DEPTH = 100
MAX_YAML_BYTES = 1 << 20
MAX_YAML_ALIASES = 1_000
MAX_YAML_NODES = 1_000_000
INT64_MAX = 2**63 - 1  # seeds and limits are written to runs.jsonl, read back as 64-bit integers
NAME_MAX = 255  # bytes in a path component on ext4, XFS, Btrfs, APFS and NTFS
PATH_MAX = 4096  # bytes in a whole path on Linux

_SCAN_CHUNK = 1 << 20  # bytes split at a time: a text of quotes alone makes a list of at most this many parts
_BRACKETS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[{]}"))


def check_path_text(text: str, what: str) -> str:
    """`text` as a path the OS can take: no NUL, each component at most NAME_MAX bytes, the whole at most
    PATH_MAX; else ConfigError naming `what` (an option). Checked before any file call, whose OSError
    (ENAMETOOLONG) would otherwise surface wherever the path is first touched."""
    encoded = os.fsencode(text)
    if b"\x00" in encoded:
        raise ConfigError(f"{what}: a path cannot contain a NUL character")
    if len(encoded) > PATH_MAX:
        raise ConfigError(f"{what}: the path is {len(encoded)} bytes long; at most {PATH_MAX}")
    longest = max(encoded.split(b"/"), key=len)
    if len(longest) > NAME_MAX:
        raise ConfigError(f"{what}: a path component is {len(longest)} bytes long ({os.fsdecode(longest[:40])}...); "
                          f"file names have at most {NAME_MAX}")
    return text


def open_regular(path: str | Path) -> BinaryIO:
    """A regular file opened for binary reading (to read it in parts: a large file streamed line by line),
    or ConfigError saying what the path is instead."""
    path = Path(path)
    check_path_text(str(path), str(path)[:80])
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO opens at once instead of waiting for a writer
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "Is a directory" if stat.S_ISDIR(mode) else "not a regular file (a device, FIFO or socket)"
        raise ConfigError(f"{path}: cannot read: {kind}")
    return os.fdopen(fd, "rb")


def read_bytes(path: str | Path, limit: int | None = None) -> bytes:
    """A regular file's bytes (at most `limit` of them), or ConfigError saying what the path is instead."""
    with open_regular(path) as handle:
        try:
            data = handle.read() if limit is None else handle.read(limit + 1)
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc
    if limit is not None and len(data) > limit:
        raise ConfigError(f"{path}: larger than {limit:,} bytes, the most such a file may hold")
    return data


def read_text(path: str | Path, limit: int | None = None) -> str:
    """A regular file's UTF-8 text (read_bytes), or ConfigError naming the first byte that is not UTF-8."""
    data = read_bytes(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from exc


def json_depth(text: str | bytes) -> int:
    """The deepest nesting of arrays and objects in JSON text, in linear time without parsing it: only brackets
    outside strings count (in malformed text they count as they stand; the parser refuses it anyway).

    Escaped backslashes, then escaped quotes, are dropped first (a run of backslashes pairs up left to right, as
    JSON reads it), so every quote left opens or closes a string. All the work is in C: bytes methods, `array`
    and `accumulate`; any layout of quotes and backslashes costs the same per byte."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    unescaped = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    depth = deepest = 0
    outside = True  # whether the chunk starts outside a string
    for start in range(0, len(unescaped), _SCAN_CHUNK):
        parts = unescaped[start:start + _SCAN_CHUNK].split(b'"')
        brackets = array("b", b"".join(parts[0 if outside else 1::2]).translate(_BRACKETS, _NOT_BRACKETS))
        if len(parts) % 2 == 0:  # an odd number of quotes: the next chunk starts on the other side
            outside = not outside
        if brackets:
            deepest = max(deepest, max(accumulate(brackets, initial=depth)))
            depth += sum(brackets)
    return deepest


def check_depth(text: str | bytes, where: str) -> None:
    """ConfigError naming `where` when JSON text nests deeper than MAX_DEPTH."""
    depth = json_depth(text)
    if depth > MAX_DEPTH:
        raise ConfigError(f"{where}: nested {depth} arrays/objects deep; at most {MAX_DEPTH}")


def parse_json(text: str | bytes, where: str) -> Any:
    """JSON text parsed, depth-bounded; a syntax error is a ConfigError naming `where`, the line and column."""
    check_depth(text, where)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: not valid JSON ({exc.msg}, line {exc.lineno} column {exc.colno})") from exc


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader with bounds on nesting, aliases and expanded size, checked while composing
    (before any object is built). Each node's expanded size (itself plus what its aliases stand for) is kept,
    so an alias adds the size of what it refers to."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._sizes: dict[int, int] = {}
        self._aliases = self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_YAML_ALIASES:
                raise ConfigError(f"more than {MAX_YAML_ALIASES} aliases (*name)")
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise ConfigError(f"nested more than {MAX_DEPTH} deep")
        node = super().compose_node(parent, index)
        self._depth -= 1
        self._sizes[id(node)] = size = 1 + sum(self._size(child) for child in _children(node))
        if size > MAX_YAML_NODES:
            raise ConfigError(f"expands to more than {MAX_YAML_NODES:,} values (aliases included)")
        return node

    def _size(self, node: Any) -> int:
        size = self._sizes.get(id(node))
        if size is None:  # an alias to a node still being composed: it contains itself
            raise ConfigError("an alias refers to a node that contains it (a cycle)")
        return size


def _children(node: Any) -> list[Any]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def parse_yaml(text: str, where: str) -> Any:
    """YAML text parsed by the bounded safe loader; any problem a ConfigError naming `where`."""
    if len(text) > MAX_YAML_BYTES:
        raise ConfigError(f"{where}: {len(text):,} characters of YAML; at most {MAX_YAML_BYTES:,}")
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_data()
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: not valid YAML: {exc}") from exc
    finally:
        loader.dispose()


def load_json(path: str | Path) -> Any:
    """A JSON file parsed within the bounds (a results directory's config.json, sweep.json)."""
    return parse_json(read_text(path), str(path))


def load_data(path: str | Path) -> Any:
    """A JSON (.json) or YAML (any other suffix) file parsed within the bounds."""
    text = read_text(path, MAX_YAML_BYTES if Path(path).suffix != ".json" else None)
    return parse_json(text, str(path)) if Path(path).suffix == ".json" else parse_yaml(text, str(path))
