"""Flower Strategy subclasses (server side); no math here."""
