"""From a change to what the council reads: parsing, ranking, packing, signals, redaction.

No network I/O: files come in as data, so the CLI and the App use it alike.
"""
