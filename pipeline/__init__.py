"""attnbench: when do attention-based networks beat gradient boosting on real tabular data?

Importing the package is cheap on purpose: torch, ray, plotly and the boosting libraries load
only inside the modules that need them.
"""

__version__ = "0.1.0"
