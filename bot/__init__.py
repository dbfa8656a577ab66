"""PR Council: a council of AI reviewers for pull requests."""

__version__ = "0.1.0"
