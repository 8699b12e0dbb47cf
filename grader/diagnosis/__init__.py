"""One diagnosis per failing module: the catalog of known mistakes, the first differing step, errors explained."""
