"""Putting one review together, for the App's worker, the Action and the command line alike.

source (local git, a diff file, a pull request through the forge) + the repository's
configuration and personas + the operator's settings -> context -> council inputs ->
engine run -> the recorded advisory.
"""
