"""An in-memory file system for simulated tools: nothing touches the real disk."""
from __future__ import annotations

import posixpath


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


class MemoryFS:
    def __init__(self, files: dict[str, str] | None = None):
        self.files: dict[str, str] = {}
        for path, content in (files or {}).items():
            self.files[normalize_path(path)] = content
        self._in_order: list[tuple[str, str]] | None = None  # (path, content) by path, until a write

    def read(self, path: str) -> str:
        key = normalize_path(path)
        if key not in self.files:
            raise FileNotFoundError(f"no such file: {key}")
        return self.files[key]

    def write(self, path: str, content: str) -> str:
        key = normalize_path(path)
        self.files[key] = content
        self._in_order = None
        return key

    def listing(self, prefix: str = "") -> list[str]:
        prefix = normalize_path(prefix) + "/" if prefix.strip(" ./") else ""
        return sorted(p for p in self.files if p.startswith(prefix))

    def search(self, text: str, limit: int = 20) -> list[tuple[str, int]]:
        """(path, line number) of lines containing `text`, in path order."""
        hits: list[tuple[str, int]] = []
        if self._in_order is None:
            self._in_order = sorted(self.files.items())
        for path, content in self._in_order:
            if text not in content:  # one scan of the whole file before splitting it into lines
                continue
            for number, line in enumerate(content.splitlines(), 1):
                if text in line:
                    hits.append((path, number))
                    if len(hits) >= limit:
                        return hits
        return hits
