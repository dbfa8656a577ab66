"""In-process fakes of the services the bot talks to (see TESTING.md)."""

from tests.fakes.model_server import (
    FakeModelServer,
    FakeRequest,
    Fault,
    FaultReply,
    RecordedCall,
    Reply,
    run_fake_model_server,
)

__all__ = [
    "FakeModelServer",
    "FakeRequest",
    "Fault",
    "FaultReply",
    "RecordedCall",
    "Reply",
    "run_fake_model_server",
]
