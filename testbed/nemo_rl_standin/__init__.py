"""A stand-in for the NeMo RL v0.7.0 image's /opt/nemo-rl, for the test bed's Ray pods."""
