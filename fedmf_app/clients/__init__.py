"""Flower NumPyClient subclasses (client side); no math here."""
