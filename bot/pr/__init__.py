"""The pull-request service: the review of one pull request, written once for every
delivery path (the App's queue, the GitHub Action), against the forge seam (`bot.forge`).

- `admission`: who may convene, which automatic trigger applies, the protocol;
- `review`: the record, the options from the request, the models, the endings without a
  verdict;
- `comment`: the sticky comment, rendered shorter while the forge refuses it;
- `status`: the status on the head commit, with the fallbacks of a forge's missing parts;
- `notes`: the setup problems said on the status, and the `/council help` reply;
- `failures`: why a review failed, as a sentence for the people on the pull request;
- `books`: the ledger's bookkeeping of a review's job (requested, resumed, deferred,
  published).

What differs between the paths comes in as ports (a lock, a logger, the forge's
capabilities); the queue (`bot.queue`) and the Action (`bot.action`) are the wiring.
"""
