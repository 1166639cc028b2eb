"""From stored trials to answers: the statistics, a cell's figures, the diagnosis of a slow
client, two runs compared, and the spread of the same cells across runs."""
