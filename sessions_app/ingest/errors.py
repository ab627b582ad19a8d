"""Why a file cannot be imported: not in a supported format, or refused as it is."""

from __future__ import annotations

from pathlib import Path


class UnknownFormatError(ValueError):
    """The file is not in any supported format (or not in the one forced). Has `path`."""

    def __init__(self, path: Path | str, detail: str) -> None:
        super().__init__(f"{path}: {detail}")
        self.path = path


class ImportRefusedError(ValueError):
    """The file was read but cannot be imported as it is (nothing was written). Has
    `path` (a file, or a database URL without its password); the message says why: a
    session id a URL cannot carry, a session that exists from another source (see
    `import_file`'s `replace`), JSON nested too deeply to read, an agentops export that
    does not fit its format (`sessions_app.export.format`), a value a format cannot hold
    (`line`: the message is then "PATH:LINE: reason"; 0 = the file as a whole), or a file
    that holds no session."""

    def __init__(self, path: Path | str, detail: str, line: int | None = None) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {detail}")
        self.path = path
        self.line = line
