"""Wiring of the stack, one concern per module; `__main__.py` calls them in order.

Each `build_*` takes the validated StackConfig and what earlier steps returned, creates
components, and returns them in a small typed bundle. Only components create resources.
"""
