"""`council eval`: the council measured on a code-review benchmark, against local clones.

- `dataset`: AACR-Bench's and Martian's files read into pull requests with golden comments,
  and the local clones they are diffed in (three dots, as GitHub shows a pull request);
- `coverage`: the model-free figure, golden lines inside the packed context;
- `run`: the arms (the chosen protocols, one seat of the same model, N samples of it at
  the protocol's token budget) on one pull request;
- `score`: golden comments against findings (a judge model, line overlap), precision,
  recall, F1, location accuracy;
- `report`: results.json, results.md and the F1-against-cost plot.
"""
