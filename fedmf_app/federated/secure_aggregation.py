"""Old name of :mod:`fedmf_app.federated.secure_sum_flower`, kept only for ``fedmf_app/methods/iai``
until it imports the new name (the iai folder is being reworked on another branch)."""

from fedmf_app.federated.secure_sum_flower import masked_upload, summed_arrays

__all__ = ["masked_upload", "summed_arrays"]
