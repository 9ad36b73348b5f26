"""One line per error for the person watching a run; the tracebacks to a file.

A client's exception reaches the ServerApp's log several times (Flower's simulation backend logs
it with its traceback, the failed reply carries the traceback in its text, the server's own
message quotes that reply, the simulation logs the ServerApp's exception again). :func:`cause_of`
finds the cause in such a text: the message of its last exception line. :class:`TracebacksToFile`,
put on the handlers of Flower's logger by :func:`route_tracebacks`, writes every record that holds
a traceback to a log file and shows it as one line, the text before the traceback and the cause,
once per cause (a record whose cause quotes one already shown, or is quoted by it, is not shown).
"""

from __future__ import annotations

import logging
import re
import traceback
from pathlib import Path

__all__ = ["TracebacksToFile", "cause_of", "one_line", "route_tracebacks"]

#: An exception line of a traceback: ``package.module.SomeError: message``.
_EXCEPTION_LINE = re.compile(
    r"^\s*(?:[A-Za-z_][\w]*\.)*([A-Za-z_]\w*(?:Error|Exception|Exit))(?:\([^)]*\))?: (.+)$"
)
#: A frame line of a traceback.
_FRAME = re.compile(r'^\s*File ".*", line \d+')
#: Where a one-line form of a message stops: the start of what Flower or Python append.
_CUTS = ("Message contains an Error", "Traceback (most recent call last)", "\n")


def has_traceback(text: str) -> bool:
    """Whether ``text`` holds a Python traceback."""
    return any(_FRAME.match(line) for line in text.splitlines())


def cause_of(text: str) -> str:
    """The message of the last exception line of ``text`` (Ray's wrappers skipped), else ``text``.

    Parameters
    ----------
    text : str
        An error message, possibly with tracebacks in it.

    Returns
    -------
    str
    """
    causes = [
        m.group(2).strip()
        for line in text.splitlines()
        if (m := _EXCEPTION_LINE.match(line)) and not line.lstrip().startswith("ray.")
    ]
    return causes[-1] if causes else text.strip()


def one_line(text: str) -> str:
    """``text`` as one line: what precedes a traceback (or Flower's wrapper of a client's error),
    then the cause."""
    lead = text
    for cut in _CUTS:
        lead = lead.split(cut, 1)[0]
    lead = lead.strip().rstrip(":( ").strip()
    if "ray::" in lead:  # Ray's actor and process ids: nothing for a person
        lead = ""
    cause = cause_of(text)
    if not lead or cause.startswith(lead):
        return cause
    return lead if cause in lead else f"{lead}: {cause}"


class TracebacksToFile(logging.Filter):
    """Writes records that hold a traceback to ``path``; shows each as one line, once per cause.

    Parameters
    ----------
    path : str or Path
        The log file (appended to; its folder is created).
    """

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = Path(path)
        self._shown: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if record.exc_info:
            text = f"{text}\n{''.join(traceback.format_exception(*record.exc_info))}"
        if not has_traceback(text):
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as log_file:
            log_file.write(f"{record.levelname} {record.created:.3f}\n{text}\n\n")
        cause = cause_of(text)
        if any(cause in shown or shown in cause for shown in self._shown):
            return False  # the same cause, again (e.g. quoted by the error that it caused)
        self._shown.add(cause)
        record.msg, record.args = f"{one_line(text)} (traceback in {self.path})", ()
        record.exc_info, record.exc_text = None, None
        return True


def route_tracebacks(path: str | Path) -> TracebacksToFile:
    """Put a :class:`TracebacksToFile` on every handler of Flower's logger (once per process).

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    TracebacksToFile
        The filter in place (an earlier one is kept, pointing at its own file).
    """
    handlers = logging.getLogger("flwr").handlers
    for handler in handlers:
        for existing in handler.filters:
            if isinstance(existing, TracebacksToFile):
                return existing
    routed = TracebacksToFile(path)
    for handler in handlers:
        handler.addFilter(routed)
    return routed
