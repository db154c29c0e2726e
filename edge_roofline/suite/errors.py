"""Which exceptions are the user's to fix, and their one-line form: shared by the command line
(``edge-roofline CMD: error: ...``, exit 2) and the nodes' start-up (``NODE: cannot start: ...``,
exit 2). Anything else is a bug and keeps its traceback."""

from __future__ import annotations

import traceback
from pathlib import Path

PACKAGE = __name__.split(".")[0]
_ROOT = Path(__file__).resolve().parent.parent  # the package


def _defined_here(cls: type) -> bool:
    return cls.__module__.split(".")[0] == PACKAGE


def is_user_error(exc: BaseException) -> bool:
    """True for a bad input or environment rather than a bug:
    - an exception class of this package (ConfigError, ScenarioError, ModelLoadError, ShapeError,
      CostModelError, PlatformError, BackendError, ErtError, UnknownModelError, ...): raised on
      purpose, with a message written for the user;
    - OSError: a missing or unreadable file, a device that refuses; UnicodeDecodeError: a file
      read as text that is not (a binary given as a YAML file; the user's files are read through
      paths.read_text_file, whose NotTextError names the file; elsewhere the codec's own line);
    - a ValueError raised by this package's own validation (a library's ValueError, or a
      KeyError/TypeError/AttributeError anywhere, is a bug)."""
    if any(_defined_here(cls) for cls in type(exc).__mro__):
        return True
    if isinstance(exc, (OSError, UnicodeDecodeError)):  # the latter: a file given as text is not
        return True
    if isinstance(exc, ValueError) and exc.__traceback__ is not None:
        return Path(traceback.extract_tb(exc.__traceback__)[-1].filename).resolve().is_relative_to(_ROOT)
    return False


def one_line(exc: BaseException) -> str:
    """The message on one line (a YAML error's report spans several; a KeyError's is quoted; an
    OSError from open() is ``PATH: why``, not ``[Errno 21] Is a directory: 'PATH'``)."""
    if isinstance(exc, OSError) and not _defined_here(type(exc)) and exc.filename and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    quoted = isinstance(exc, KeyError) and type(exc).__str__ is KeyError.__str__ and len(exc.args) == 1
    text = exc.args[0] if quoted else str(exc)
    return " ".join(str(text).split()) or type(exc).__name__
