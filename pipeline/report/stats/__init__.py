"""The report's statistics: what the pages show, computed from the views' frames and never drawn here
(aggregates, picks by validation, Elo, significance, crossovers and their projections, standings,
rankings, dataset traits, tuned beside defaults, ensembles, the answer and the claims' verdicts), and
(verdicts.py) the one verdict of a pair of models on a (dataset, size) with its corrected interval."""
