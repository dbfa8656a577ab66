"""`council models check` on a local server: what it says of the server's speed."""

from __future__ import annotations

from pathlib import Path

from bot.cli.modelcheck import check_models
from bot.settings import Settings
from tests.support.model_server import FakeModelServer


async def test_a_server_that_answers_in_one_piece_is_not_timed_and_says_so(
    models: FakeModelServer, tmp_path: Path
) -> None:
    models.ollama_models = ["llama3.1:8b"]
    endpoint = {"base_url": f"{models.url}/v1", "local": True, "structured": "format"}
    settings = Settings(
        _env_file=None,
        max_retries=0,
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'council.db'}",
        endpoints={"ollama": endpoint},
    )
    (result,) = await check_models(settings, ["ollama:llama3.1:8b"])
    assert result.ok and result.prompt_tokens_per_s is None
    assert result.speed_error == (
        "not measured: the server sent its answer in one piece (not streamed)"
    )
    assert result.seat_call_s is None and result.warnings == []
    assert result.seat_deadline == "the 300 s call deadline (COUNCIL_CALL_DEADLINE_S)"
