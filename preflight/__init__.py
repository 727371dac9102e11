"""Offline preflight: run the real program under Pulumi mocks and evaluate the policy pack."""
