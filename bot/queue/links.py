"""Where a deliberation's transcript page is, when the web process says where it is served
(`COUNCIL_PUBLIC_URL`): the check run's details link and the comment's last line."""

from __future__ import annotations

from urllib.parse import quote

from bot.settings import Settings

__all__ = ["transcript_path", "transcript_url"]


def transcript_path(deliberation_id: str) -> str:
    return f"/deliberations/{quote(deliberation_id, safe='')}"


def transcript_url(settings: Settings, deliberation_id: str) -> str | None:
    """`{COUNCIL_PUBLIC_URL}/deliberations/{id}`; None when COUNCIL_PUBLIC_URL is unset."""
    if not settings.public_url:
        return None
    return settings.public_url.rstrip("/") + transcript_path(deliberation_id)
