"""Telling a node that ran out of time from one that failed (reasons as text, no Flower).

Every message the server sends carries a time to live: run config ``round-timeout-s`` (the
ServerApp's round timeout, which Flower's legacy loop hands to every proxy as the message's TTL;
the handshake, the alignment and the key agreement use the same key). A node still working when the
TTL runs out never gets its reply in: Flower 1.42 answers instead with an error whose reason is
"Message Unavailable - ... may have expired due to its TTL" (or "Reply Message Unavailable - The
reply message has expired"), and a Grid that stops waiting returns no reply at all (the proxy then
raises "Expected one Message but got: 0"). Flower gives the first reason also for a node that
left the federation, which a node that is still computing cannot be told from.
:func:`timeout_advice` turns such reasons into a sentence that names the key, its value and the
nodes, so that the user knows what to raise; :func:`node_failure` puts it into the message for one
node's failed exchange.
"""

from __future__ import annotations

from collections.abc import Iterable

from fedmf_app.federated.error_lines import cause_of

__all__ = ["EXPIRY_MARKERS", "expired", "node_failure", "timeout_advice"]

#: Parts of the reasons Flower gives when a message or its reply outlived its TTL, or no reply came.
EXPIRY_MARKERS = ("Message Unavailable", "Expected one Message but got: 0")


def expired(reason: str) -> bool:
    """Whether ``reason`` says that a message timed out rather than failed on the node.

    Parameters
    ----------
    reason : str
        An error's text, as Flower's proxy or the node reported it.

    Returns
    -------
    bool
    """
    return any(marker in reason for marker in EXPIRY_MARKERS)


def timeout_advice(reasons: Iterable[str], timeout: float, who: str) -> str:
    """The sentence naming ``round-timeout-s`` when one of ``reasons`` is a timeout, else ``""``.

    Parameters
    ----------
    reasons : iterable of str
        The errors of the nodes that did not reply.
    timeout : float
        The TTL the messages had (run config ``round-timeout-s``).
    who : str
        The nodes that did not reply, for the message (e.g. ``"partition(s) [2, 3]"``).

    Returns
    -------
    str
        E.g. ``"partition(s) [2, 3] did not reply within run config 'round-timeout-s' = 600 s
        ..."``; empty when no reason is a timeout.
    """
    if not any(expired(reason) for reason in reasons):
        return ""
    return (
        f"{who} did not reply within run config 'round-timeout-s' = {timeout:g} s (the messages' "
        "time to live): raise it for this data size and machine, e.g. "
        f"--run-config 'round-timeout-s={max(2 * timeout, 60.0):g}'"
    )


def node_failure(failed: str, reason: str, timeout: float) -> str:
    """The message for one node's failed exchange: ``failed``, the advice after a timeout, ``reason``.

    Parameters
    ----------
    failed : str
        Start of the message, e.g. ``"SuperNode 7 failed the handshake"``.
    reason : str
        The error Flower's proxy raised or the node reported.
    timeout : float
        The message's time to live (run config ``round-timeout-s``).

    Returns
    -------
    str
        ``"<failed>: it did not reply within run config 'round-timeout-s' = ... : <reason>"`` after
        a timeout (:func:`timeout_advice`), else ``"<failed>: <reason>"``; a reason that carries a
        traceback (a client's exception) is given by its cause
        (:func:`~fedmf_app.federated.error_lines.cause_of`).
    """
    advice = timeout_advice([reason], timeout, "it")
    reason = cause_of(reason)
    return f"{failed}: {advice}: {reason}" if advice else f"{failed}: {reason}"
