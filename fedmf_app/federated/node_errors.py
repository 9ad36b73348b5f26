"""What a node tells the server when it refuses or fails a message: the stage and the cause, no more.

Flower sends the text of a ClientApp's exception to the server. The node's own log keeps the whole error
(Flower's log adds the traceback); the server gets :class:`NodeError`, whose text names the partition,
the stage and the cause, with every file path and key fingerprint replaced (:func:`public_reason`), so
that no node config value (data file, signing key, peer keys, state folder, labels file) leaves the node
in an error.
"""

from __future__ import annotations

import re
from logging import ERROR

from flwr.common.logger import log

__all__ = ["NodeError", "public_reason", "refusal"]

#: A file path: absolute, home- or dot-relative, or with a folder in it.
_PATH = re.compile(r"(?:(?<=[\s'\"(=:,])|^)(?:~|\.{1,2})?/[^\s'\",;:)]+|(?<![\w/])[\w.-]+(?:/[\w.-]+)+")
#: An SSH-style key fingerprint.
_FINGERPRINT = re.compile(r"SHA256:[A-Za-z0-9+/=]+")


class NodeError(RuntimeError):
    """A node's refusal or failure as the server may see it (no paths, no keys)."""


def public_reason(exc: BaseException) -> str:
    """``exc``'s text with every file path and key fingerprint replaced.

    Parameters
    ----------
    exc : BaseException

    Returns
    -------
    str
        E.g. ``"DataError: <path>: rows have different numbers of columns ([2, 21])"``.
    """
    text = str(exc).strip() or type(exc).__name__
    text = _FINGERPRINT.sub("<fingerprint>", text)
    text = _PATH.sub("<path>", text)
    return f"{type(exc).__name__}: {text}"


def refusal(me: str, stage: str | None, exc: BaseException) -> NodeError:
    """The error the server sees for ``exc``, after logging ``exc`` in full on the node.

    Parameters
    ----------
    me : str
        The node, e.g. ``"SuperNode 7 (partition 1)"``.
    stage : str or None
        The stage it was answering; ``None`` when it refuses the run before any (its policy, its
        data).
    exc : BaseException

    Returns
    -------
    NodeError
    """
    what = "the run" if stage is None else f"stage {stage!r}"
    log(ERROR, "%s refuses %s: %s: %s", me, what, type(exc).__name__, exc)
    return NodeError(f"{me} refused {what}: {public_reason(exc)} (details in the node's log)")
