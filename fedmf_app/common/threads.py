"""One thread for a client's kernels, whatever the process was given.

A client's numbers must not depend on the cores of the machine it runs on: numpy's BLAS sums a
product in another order with another number of threads, and a method whose run is sensitive to
round-off (paper C's kNN graphs and k-means) then ends in another clustering. Ray also sets
``OMP_NUM_THREADS`` to an actor's CPUs, so under the simulation engine the thread count follows
``client-resources-num-cpus``.
"""

from __future__ import annotations

from functools import cache

from threadpoolctl import ThreadpoolController, threadpool_limits

__all__ = ["one_blas_thread", "single_threaded"]


@cache
def _pools() -> ThreadpoolController:
    """The process's thread pools, found once (a search costs about 1 ms, a limit through it 10 us)."""
    return ThreadpoolController()


def one_blas_thread():
    """Context manager: numpy's BLAS on one thread inside the block (pools found once per process).

    For kernels called many times a second; numpy's BLAS is loaded with numpy, so the first search
    finds it.

    Returns
    -------
    threadpoolctl limiter, usable as a context manager
    """
    return _pools().limit(limits=1, user_api="blas")


def single_threaded():
    """Context manager: every native thread pool loaded so far (BLAS, OpenMP) on one thread.

    Searches the pools at each call (about 1 ms), so that libraries loaded late (scikit-learn's and
    torch's OpenMP) are limited too.

    Returns
    -------
    threadpoolctl limiter, usable as a context manager
    """
    return threadpool_limits(limits=1)
