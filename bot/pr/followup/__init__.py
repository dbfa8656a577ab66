"""The follow-up: an advisory's anchored findings as review comments on their lines, the
dismissals people made, and the threads of fixed findings closed; once for the App and the
Action (`step.follow_up`), through the forge seam (bot/forge/protocol.py).

`tracked` follows a pull request's findings across its reviews in the store: whether a push
is reviewed incrementally, and after a review what it raised and what the new commits fixed.

Inline comments are opt-in (`inline_comments: true` in `.github/council.yml`, or
`/council --inline` for one run). `inline.publish_inline` does it in this order:

1. **Dismissed** findings are read first (`dismissals`): a thread of ours that a person
   resolved (not the bot itself), or a thumbs-down on our comment, dismisses its finding
   only when that person may write to the repository (`Forge.can_write`, each person's
   permission read once per review), and never when the person is the pull request's
   author and the finding is critical. A dismissed finding is marked `dismissed` in the
   store (`bot.store.findings`), dropped from the advisory for this pull request (the
   sticky comment says how many: `shown`) and never posted again - except a **critical**
   one: no dismissal takes it out of the advisory, its check run annotations or its
   verdict; it stays a finding, the sticky comment says who dismissed it, and the store
   keeps it open.
2. **Posted once** (`posting`): each comment carries its finding's fingerprint in a hidden
   marker (`markers`), and the store keeps the comment's id, so a re-review posts only the
   findings not on the PR yet, whether or not the store remembers (a second marker hashes
   the anchored line's text, so a fixed finding is told from its comment alone too).
3. **Lines the forge accepts**: a forge refuses a whole review when one comment's line is
   not in the diff, so each finding is placed first (`bot.review.anchors.DiffLines`): its
   lines must be in one hunk of the diff's right side, added or context lines (and lines
   of the hunks of the diff the review read); a range spanning hunks is put on its last
   line; a finding on head lines outside the diff (`outside_diff`) and the rest stay in
   the sticky comment and the check run's annotations only. Findings from `min_severity`
   up are posted as ONE review that only comments, a ```suggestion block where the
   finding carries the exact replacement for all its lines.
4. **Fixed** (`fixed`): a finding posted inline that a later review no longer raises,
   whose anchored line is no longer in the head's diff with that text, is marked `fixed`;
   its thread is then resolved where the credentials may (the App), or gets the reply
   "Fixed in <sha>." once (a workflow token: `Capabilities.resolve_threads`).

Fingerprints (`markers.finding_fingerprint`) are `bot.review.fingerprints.fingerprint` of
the path, the title and the text of the finding's first anchored line at head.
"""
