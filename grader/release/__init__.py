"""Instructor-only: the student template built from the reference solutions, checked for leaks."""
