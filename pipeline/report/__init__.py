"""Reports: SQL views over the results file, Plotly figures, self-contained HTML pages."""
