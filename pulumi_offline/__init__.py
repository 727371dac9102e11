"""Offline models of programs this repository does not own.

Each module stands in for one outside program that preflight and the engine test bed cannot
run here (the Pulumi CLI's config and YAML readers, pulumi-gcp's SDK types and its bridged
plans, pulumi-kubernetes' diff, the Google APIs behind both). Its docstring names the program
and the version it follows and says what it cannot prove. They lean only on each other and on
the platform's pure layer (`planning`, `stack_config`), never on preflight or the test bed.
"""
