"""The one tolerance within which two values count as the same, for the checks and the diagnosis alike.

A check fails where a value differs from the expected one by more than ``ATOL``
(:func:`grader.suite.comparisons.close`), and the diagnosis must call "differs" exactly what a check
fails on. The public checks use it too: this module ships with the template, as the whole package does.
"""

ATOL = 1e-4
