"""`make verify STACK=...`: the acceptance gates' results of a deployed stack, as one table."""
