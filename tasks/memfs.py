"""An in-memory file system for simulated tools: nothing touches the real disk."""
from __future__ import annotations

import heapq
import posixpath
from array import array
from bisect import bisect_right
from dataclasses import dataclass
from typing import Iterator


class PathError(ValueError):
    pass


def normalize_path(path: str) -> str:
    """A canonical relative path; absolute paths and any escape with '..' are refused."""
    if not isinstance(path, str) or not path.strip():
        raise PathError("path must be a non-empty string")
    path = path.strip()
    if path.startswith(("/", "~")) or "\\" in path or "\x00" in path:
        raise PathError(f"{path!r} is outside the workspace; use a relative path such as 'notes/plan.md'")
    parts = path.split("/")
    if any(part == ".." for part in parts):
        raise PathError(f"{path!r} leaves the workspace ('..' is not allowed)")
    normalized = posixpath.normpath(path)
    if normalized in (".", ""):
        raise PathError("path names no file")
    return normalized


@dataclass(frozen=True)
class SearchIndex:
    """Which lines hold each distinct word (whitespace-separated) of the files as they were indexed.

    A search text without whitespace lies inside one word of a line, so the lines holding it
    are those of the words holding it, found with one scan of the distinct words: for
    chained_lookup's 227 kB of files, 709 words in 4 kB, and a search ~100 µs -> a few µs.
    """

    words: str  # the distinct words, "\n" between them
    word_starts: list[int]
    word_lines: list[array]  # ascending ids of the lines holding each word
    paths: list[str]
    first_lines: list[int]  # id of each file's first line; ids run through the files in path order
    file_of: dict[str, int]

    @classmethod
    def of(cls, files: dict[str, str]) -> SearchIndex:
        lines_of: dict[str, array] = {}
        paths, first_lines, line_id = [], [], 0
        for path, content in sorted(files.items()):
            paths.append(path)
            first_lines.append(line_id)
            for line in content.splitlines():
                for word in set(line.split()):
                    found = lines_of.get(word)
                    if found is None:
                        found = lines_of[word] = array("I")
                    found.append(line_id)
                line_id += 1
        starts, at = [], 0
        for word in lines_of:
            starts.append(at)
            at += len(word) + 1
        return cls("\n".join(lines_of), starts, list(lines_of.values()), paths, first_lines,
                   {path: index for index, path in enumerate(paths)})

    def hits(self, text: str, limit: int, skipped_files: set[int]) -> list[tuple[str, int]]:
        """(path, line number) of the first `limit` lines holding `text` (no whitespace in it)."""
        hits: list[tuple[str, int]] = []
        for line_id in self._lines_with(text):
            file = bisect_right(self.first_lines, line_id) - 1
            if file not in skipped_files:
                hits.append((self.paths[file], line_id - self.first_lines[file] + 1))
                if len(hits) >= limit:
                    break
        return hits

    def _lines_with(self, text: str) -> Iterator[int]:
        """Ids of the lines holding `text`, ascending, each once."""
        holding = []
        at = self.words.find(text)
        while at >= 0:
            word = bisect_right(self.word_starts, at) - 1
            holding.append(self.word_lines[word])
            at = self.words.find(text, self.word_starts[word + 1]) if word + 1 < len(self.word_starts) else -1
        previous = -1
        for line_id in heapq.merge(*holding):
            if line_id != previous:
                yield line_id
                previous = line_id


class MemoryFS:
    def __init__(self, files: dict[str, str] | None = None, *, indexed: bool = False):
        """`indexed`: index the files' words now, for a corpus searched many times (chained_lookup). It is
        made once per generated instance (tasks.suites) and shared by the runs' copies."""
        self.files: dict[str, str] = {}
        for path, content in (files or {}).items():
            self.files[normalize_path(path)] = content
        self._in_order: list[tuple[str, str]] | None = None  # (path, content) by path, until a write
        self._index = SearchIndex.of(self.files) if indexed else None
        self._written: set[str] = set()  # paths written since: searched as they are now

    def __deepcopy__(self, memo: dict[int, object]) -> MemoryFS:
        """Contents are immutable strings: a copy shares them, and the search index."""
        copy = memo[id(self)] = MemoryFS.__new__(MemoryFS)
        copy.files = dict(self.files)
        copy._in_order = self._in_order
        copy._index = self._index
        copy._written = set(self._written)
        return copy

    def read(self, path: str) -> str:
        key = normalize_path(path)
        if key not in self.files:
            raise FileNotFoundError(f"no such file: {key}")
        return self.files[key]

    def write(self, path: str, content: str) -> str:
        key = normalize_path(path)
        self.files[key] = content
        self._in_order = None
        self._written.add(key)
        return key

    def listing(self, prefix: str = "") -> list[str]:
        prefix = normalize_path(prefix) + "/" if prefix.strip(" ./") else ""
        return sorted(p for p in self.files if p.startswith(prefix))

    def search(self, text: str, limit: int = 20) -> list[tuple[str, int]]:
        """(path, line number) of lines containing `text`, in path order."""
        index = self._index
        if index is None or text.split() != [text]:  # no index, or a text with whitespace (or none at all)
            if self._in_order is None:
                self._in_order = sorted(self.files.items())
            return _scan(self._in_order, text, limit)
        if not self._written:
            return index.hits(text, limit, set())
        written = sorted(self._written)
        hits = index.hits(text, limit, {index.file_of[path] for path in written if path in index.file_of})
        return list(heapq.merge(hits, _scan([(path, self.files[path]) for path in written], text, limit)))[:limit]


def _scan(files: list[tuple[str, str]], text: str, limit: int) -> list[tuple[str, int]]:
    hits: list[tuple[str, int]] = []
    for path, content in files:
        if text not in content:  # one scan of the whole file before splitting it into lines
            continue
        for number, line in enumerate(content.splitlines(), 1):
            if text in line:
                hits.append((path, number))
                if len(hits) >= limit:
                    return hits
    return hits
