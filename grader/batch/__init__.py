"""Instructor-only: a whole class graded in one run, the gradebook and the class report."""
