"""Autograder for the attention course kit (see README.md)."""
