"""The round loop: Flower's legacy ``Server``, ending when the Strategy says the run is done.

Flower's ``Server.fit`` runs a fixed number of rounds. :class:`ViewServer` runs the same rounds
(``fit_round`` then ``evaluate_round``, as Flower does: :meth:`ViewServer.run_round`) but stops
after the round in which the Strategy finished the run
(:attr:`~fedmf_app.federated.strategy.ViewFederationStrategy.done`): the last configured round,
or an earlier one when the algorithm's convergence stop fired. It keeps no History (the run's
record is ``result.json``) and does no centralised evaluation. The ServerApp and the in-process
federation (:mod:`fedmf_app.in_process`) both run this loop. After a convergence stop it logs the
rounds it ran and sets :attr:`ViewServer.rounds_config` (the ``ServerConfig`` Flower's closing
"Run finished N round(s)" line reads) to them, so that line counts the rounds that ran.
"""

from __future__ import annotations

import timeit
from logging import INFO

from flwr.common.logger import log
from flwr.server import History, Server, ServerConfig

__all__ = ["ViewServer"]


class ViewServer(Server):
    """A ``flwr.server.Server`` whose loop ends when ``strategy.done`` is true.

    Attributes
    ----------
    rounds_config : flwr.server.ServerConfig or None
        The run's ``ServerConfig``, when the ServerApp sets it: its ``num_rounds`` becomes the
        number of rounds run.
    """

    rounds_config: ServerConfig | None = None

    def fit(self, num_rounds: int, timeout: float | None) -> tuple[History, float]:
        """Run up to ``num_rounds`` rounds.

        Parameters
        ----------
        num_rounds : int
        timeout : float or None
            Seconds to wait for the replies of one round.

        Returns
        -------
        history : flwr.server.History
            Empty (results are in ``result.json``).
        elapsed : float
            Seconds spent in the rounds.
        """
        self.initialize(timeout)
        started = timeit.default_timer()
        ran = 0
        for ran in range(1, num_rounds + 1):
            self.run_round(ran, timeout)
            if self.strategy.done:
                break
        if ran < num_rounds:
            offset = self.strategy.round_offset
            log(INFO, "stopped early: ran %d of %d rounds", ran + offset, num_rounds + offset)
        if self.rounds_config is not None:
            self.rounds_config.num_rounds = ran
        return History(), timeit.default_timer() - started

    def initialize(self, timeout: float | None) -> None:
        """The Strategy's handshake and round-1 broadcast (``self.parameters``).

        Parameters
        ----------
        timeout : float or None
        """
        log(INFO, "[INIT]")
        self.parameters = self._get_initial_parameters(server_round=0, timeout=timeout)

    def run_round(self, server_round: int, timeout: float | None) -> None:
        """One round as Flower runs it: ``fit_round``, then ``evaluate_round``.

        Parameters
        ----------
        server_round : int
            Flower's round number (1, 2, ...; a resumed run's Strategy adds its offset).
        timeout : float or None
        """
        log(INFO, "")
        log(INFO, "[ROUND %s]", server_round)
        res_fit = self.fit_round(server_round=server_round, timeout=timeout)
        if res_fit is not None and res_fit[0] is not None:
            self.parameters = res_fit[0]
        self.evaluate_round(server_round=server_round, timeout=timeout)
