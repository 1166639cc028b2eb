"""Terminal output: the results table and the progress display."""
