"""The public tests' fixture ``reference``: the reference's result on a test's probe, from catalog.json."""

from grader.suite.public_reference import reference  # noqa: F401 - a fixture, found here by pytest
