"""What the long-horizon families share: an in-memory workspace with notes and a finishing tool.

Every family offers `read_file`, `write_file` (notes under notes/) and `submit_answer`; a
family adds its own tools by overriding `extra_specs` and `run_extra`. Files outside notes/
are read-only, and any path escaping the workspace gets an error result from MemoryFS.
"""
from __future__ import annotations

from abc import abstractmethod

from tasks.base import Environment, ToolCall, ToolResult, ToolSpec, tool_error
from tasks.memfs import MemoryFS, PathError, normalize_path

NOTES_DIR = "notes/"


def object_schema(properties: dict[str, dict], required: list[str] | None = None) -> dict:
    schema: dict = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


READ_FILE = ToolSpec("read_file", "Return the whole content of a file in the workspace (e.g. notes/todo.md).",
                     object_schema({"path": {"type": "string", "description": "relative path"}}, ["path"]))
WRITE_FILE = ToolSpec("write_file", "Create or overwrite a file under notes/ (your own notes; other folders are "
                                    "read-only).",
                      object_schema({"path": {"type": "string", "description": "e.g. notes/progress.md"},
                                     "content": {"type": "string"}}, ["path", "content"]), changes_state=True)
LIST_FILES = ToolSpec("list_files", "List the files in the workspace, optionally under a folder prefix.",
                      object_schema({"prefix": {"type": "string", "description": "folder, e.g. notes"}}))
SUBMIT_ANSWER = ToolSpec("submit_answer", "Finish the task. Call it exactly once, when everything else is done.",
                         object_schema({"answer": {"type": "string"}}, ["answer"]), changes_state=True)


def read_file_result(path: str, content: str) -> ToolResult:
    """A file's content framed so a reader can tell a whole read from a cut one."""
    body = content if not content or content.endswith("\n") else content + "\n"
    return ToolResult(f"== {path} ({body.count(chr(10))} lines) ==\n{body}== end of {path} ==")


class WorkspaceEnvironment(Environment):
    """An environment with a MemoryFS, the shared tools, and a family's own tools."""

    copyable = True  # files and facts are plain data

    def __init__(self, files: dict[str, str] | None = None, *, indexed: bool = False) -> None:
        super().__init__()
        self.fs = MemoryFS(files, indexed=indexed)

    def tool_specs(self) -> list[ToolSpec]:
        return [LIST_FILES, READ_FILE, WRITE_FILE, *self.extra_specs(), SUBMIT_ANSWER]

    @abstractmethod
    def extra_specs(self) -> list[ToolSpec]: ...

    @abstractmethod
    def run_extra(self, call: ToolCall) -> ToolResult: ...

    def on_submit(self, answer: str) -> ToolResult:
        """Accept the final answer; a family may refuse it while work remains."""
        self.submitted = True
        self.answer = answer
        return ToolResult("Answer submitted.")

    def run_tool(self, call: ToolCall) -> ToolResult:
        args = call.args or {}
        try:
            if call.name == "list_files":
                prefix = args.get("prefix", "").strip()
                files = self.fs.listing(normalize_path(prefix) if prefix not in ("", ".", "./") else "")
                return ToolResult("\n".join(files) if files else "No files.")
            if call.name == "read_file":
                path = normalize_path(args["path"])
                return read_file_result(path, self.fs.read(path))
            if call.name == "write_file":
                path = normalize_path(args["path"])
                if not path.startswith(NOTES_DIR):
                    return tool_error(f"write_file: only files under {NOTES_DIR} can be written, not {path}")
                self.fs.write(path, args["content"])
                return ToolResult(f"Wrote {len(args['content'])} characters to {path}.")
            if call.name == "submit_answer":
                if self.submitted:
                    return tool_error("submit_answer: an answer was already submitted")
                return self.on_submit(args["answer"])
            return self.run_extra(call)
        except (PathError, FileNotFoundError) as exc:
            return tool_error(f"{call.name}: {exc}")
