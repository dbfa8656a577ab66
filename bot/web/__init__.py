"""The FastAPI web process: webhook receiver, health, readiness and metrics."""
