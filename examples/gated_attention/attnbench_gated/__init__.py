"""An example of a model of one's own in attnbench (see the README beside this package)."""
