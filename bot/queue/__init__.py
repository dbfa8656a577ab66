"""The job queue: arq on Redis. Job requests, deterministic job ids, the worker's jobs."""
