"""Old name of :mod:`fedmf_app.common.secure_sum_math`, kept only for ``fedmf_app/methods/iai``
until it imports the new name (the iai folder is being reworked on another branch)."""

from fedmf_app.common.secure_sum_math import CHECK_WORDS

__all__ = ["CHECK_WORDS"]
