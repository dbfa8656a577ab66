"""Everything that talks to GitHub, through githubkit (async).

- `client`: the one client factory (`GitHubApp`, `RepoClient`), token renewal, metrics;
- `retry`: the one retry loop of every call (5xx, lost connections, rate limits, a 401);
- `pacing`: content-creating calls spaced out per installation;
- `fetch`: the pull request, its diff, files, commits, and repository contents;
- `permissions`: who may convene the council;
- `publish`: reactions, replies, the sticky comment and the check run;
- `errors`: githubkit's exceptions as the forge's errors, never carrying a credential;
- `forge`: `GitHubForge`, the forge seam (`bot.forge.Forge`) over all of the above.
"""
