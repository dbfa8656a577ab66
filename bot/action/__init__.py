"""PR Council as a GitHub Action: `council action` in a workflow job.

The workflow's event payload is routed exactly as the App routes a webhook
(`bot.web.routing`, `bot.commands`); the review is the App's (`bot.review`: the PR through
the API, the config, personas and guidance from the default branch), run in the job's
process with a SQLite ledger in a temporary directory and no Redis; the advisory is
published by the pull-request service (`bot.pr`) through the forge seam as one sticky
comment and one "Council" check run, authenticated with the workflow's `GITHUB_TOKEN`.
The action never checks out or runs the pull request's code.
"""
