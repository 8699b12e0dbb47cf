"""The pytest plugin behind every grading suite and what its tests call: comparisons, verdicts, probe checks."""
