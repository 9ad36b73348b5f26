"""The quality study: defaults and grids of every method on the real development data sets."""
