"""The one place a review is assembled, for the App's worker and the command line alike.

source (local git, a diff file, a pull request through GitHub) + the repository's
configuration and personas + the operator's settings -> context -> council inputs ->
engine run -> the recorded advisory.
"""
