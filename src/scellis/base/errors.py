"""User-facing error types (base layer): every user-caused failure is one of these."""

from __future__ import annotations


def shown(text: str, limit: int = 120) -> str:
    """``text`` from a user's file as a message shows it: as written when it is printable
    (and short), else quoted with escapes, so a message stays one line."""
    text = str(text)
    if text.isprintable() and len(text) <= limit:
        return text
    return repr(text[:limit]) + ("..." if len(text) > limit else "")


class ScellisError(Exception):
    """An error caused by user input; the CLI prints it as one line and exits 2."""

    exit_code = 2


class ShapeError(ScellisError):
    """Shapes that do not fit an op (broadcasting, matmul, reshape...)."""


class DTypeError(ScellisError):
    """A dtype an op or a device does not support."""


class DeviceError(ScellisError):
    """A device that is missing, or asked to do what it cannot."""


class LimitError(DeviceError):
    """A request that would exceed a device limit; names the limit."""


class AutogradError(ScellisError):
    """Misuse of backward (non-scalar root without a gradient, no graph...)."""


class Diagnostic(ScellisError):
    """An error located in a source file: printed as ``file:line:col: message``.

    ``fix`` says in words what would mend it; ``sets``, when the mend is certain, is the
    record edit that makes it (dotted path -> value, as ``--set`` takes them), so a form
    can offer it as one click."""

    def __init__(
        self,
        message: str,
        file: str = "<input>",
        line: int = 1,
        col: int = 1,
        fix: str | None = None,
        sets: dict | None = None,
    ):
        self.message, self.file, self.line, self.col, self.fix = message, file, line, col, fix
        self.sets = sets
        text = f"{file}:{line}:{col}: {message}"
        if fix:
            text += f" ({fix})"
        super().__init__(text)
